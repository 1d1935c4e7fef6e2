package audit

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// zeroOracle is a model whose every example has a zero gradient, so that whatever the
// optimizer receives is the canaries' contribution.
type zeroOracle struct{ params []float32 }

func (z zeroOracle) Params() []float32 { return z.params }
func (z zeroOracle) ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error) {
	return data.Stats{N: b.N}, nil
}
func (z zeroOracle) PerSampleGradSum(b data.Batch, f func(int, []float32), grad []float32) (data.Stats, error) {
	return data.Stats{N: b.N}, nil
}

// Sensitivity: at any canary scale, each canary that joins a batch adds at most C to the
// clipped sum (ModelMix's l∞ bound C/√p too), on its own support, so the sum equals the sum of
// individually clipped contributions; under ModelMix's clipping a canary keeps its full norm C.
func TestCanaryContributionIsClipped(t *testing.T) {
	const params, m, clip = 4000, 20, 0.5
	for _, c := range []struct {
		name    string
		support int
		scale   float64
		linf    int
	}{
		{"Dirac, l2", 1, CanaryNorm, 0},
		{"Dirac, huge", 1, 1e30, 0},
		{"Dirac, below C", 1, 0.25, 0},
		{"spread, l2+l∞ p = 100", 100, CanaryNorm, 100},
		{"spread, l2+l∞, huge", 100, 1e30, 100},
	} {
		rng := rand.New(rand.NewPCG(1, 1))
		included := make([]bool, m)
		for i := range included {
			included[i] = i%3 != 0
		}
		usage := make([]float64, params)
		g, err := newGradientCanaries(included, usage, c.support, c.scale*clip, rng)
		if err != nil {
			t.Fatal(err)
		}
		g.rate = 1 // every included canary joins the batch
		o := g.wrap(zeroOracle{params: make([]float32, params)})
		grad := make([]float32, params)
		if c.linf > 0 {
			_, err = o.PerSampleGradSum(data.Batch{N: 3}, func(_ int, v []float32) {
				if _, err := optim.ClipL2Linf(v, clip, c.linf); err != nil {
					t.Error(err)
				}
			}, grad)
		} else {
			_, err = o.ClippedGradSum(data.Batch{N: 3}, clip, grad, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		want := math.Min(c.scale, 1) * clip
		var total float64
		for i, sup := range g.support {
			var n2, linf float64
			for _, k := range sup {
				v := float64(grad[k])
				n2 += v * v
				linf = math.Max(linf, math.Abs(v))
			}
			norm := math.Sqrt(n2)
			total += n2
			switch {
			case !included[i] && norm != 0:
				t.Errorf("%s: excluded canary %d contributed %g", c.name, i, norm)
			case included[i] && (norm > clip || norm < want*(1-1e-5)):
				t.Errorf("%s: canary %d contributed norm %.9g, want %.9g ≤ C = %g", c.name, i, norm, want, clip)
			case c.linf > 0 && linf > clip/math.Sqrt(float64(c.linf)):
				t.Errorf("%s: canary %d has l∞ %g above C/√p", c.name, i, linf)
			}
		}
		// Nothing outside the supports.
		if all := optim.Norm2(grad); math.Abs(all*all-total) > 1e-9*total {
			t.Errorf("%s: the sum has norm² %g outside the canaries' %g", c.name, all*all, total)
		}
	}
}

// Canaries go on the least-used coordinates, on disjoint supports.
func TestCanariesOnQuietCoordinates(t *testing.T) {
	usage := make([]float64, 100)
	for j := range usage {
		usage[j] = float64(100 - j) // the last coordinates are the quietest
	}
	g, err := newGradientCanaries(make([]bool, 10), usage, 2, 1, rand.New(rand.NewPCG(2, 2)))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, sup := range g.support {
		for _, k := range sup {
			if k < 80 || seen[k] {
				t.Errorf("coordinate %d: want the 20 quietest (80..99), each once", k)
			}
			seen[k] = true
		}
	}
}

// Input canaries: add/remove leaves an excluded canary out; replace-one keeps n and puts the
// source example back. A canary's norm never exceeds its source's, and its label differs.
func TestInputCanarySplit(t *testing.T) {
	const n, d, m = 40, 5, 8
	s := &data.Split{N: n, D: d, X: make([]float32, n*d), Y: make([]int32, n)}
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range n {
		s.Y[i] = int32(i % 3)
		for j := range d {
			s.X[i*d+j] = float32(rng.NormFloat64())
		}
	}
	included := []bool{true, false, true, true, false, false, true, false}
	for _, replace := range []bool{false, true} {
		c := &inputCanaries{included: included, replace: replace, rng: rand.New(rand.NewPCG(4, 4))}
		out, err := c.split(s)
		if err != nil {
			t.Fatal(err)
		}
		want := n - m + 4
		if replace {
			want = n
		}
		if out.Len() != want {
			t.Errorf("replace %v: %d examples, want %d", replace, out.Len(), want)
		}
		for i := range m {
			src := s.Row(n - m + i)
			if optim.Norm2(c.x[i*d:(i+1)*d]) > optim.Norm2(src) {
				t.Errorf("canary %d has norm %g above its source's %g", i, optim.Norm2(c.x[i*d:(i+1)*d]), optim.Norm2(src))
			}
			if c.y[i] == s.Y[n-m+i] || c.y[i] < 0 || c.y[i] > 2 {
				t.Errorf("canary %d has label %d, source %d", i, c.y[i], s.Y[n-m+i])
			}
		}
		// The first n − m examples are untouched.
		for j := range (n - m) * d {
			if out.X[j] != s.X[j] {
				t.Fatalf("replace %v: base example changed at %d", replace, j)
			}
		}
	}
}

// A canary whose coordinates overflow float32 is an error naming the config key, never a
// canary silently clipped to zero.
func TestCanaryNotFiniteIsAnError(t *testing.T) {
	for _, c := range []struct {
		name    string
		support int
		norm    float64
	}{
		{"Dirac", 1, 1e40},
		{"spread", 4, 1e300},
	} {
		rng := rand.New(rand.NewPCG(1, 1))
		g, err := newGradientCanaries([]bool{true, true}, make([]float64, 100), c.support, c.norm, rng)
		if err != nil {
			t.Fatal(err)
		}
		g.rate = 1
		o := g.wrap(zeroOracle{params: make([]float32, 100)})
		grad := make([]float32, 100)
		_, err = o.ClippedGradSum(data.Batch{N: 2}, 1, grad, nil)
		if !errors.Is(err, optim.ErrNotFiniteVector) || !strings.Contains(err.Error(), "lower optimizer.clip_norm") {
			t.Errorf("%s: err = %v, want ErrNotFiniteVector naming optimizer.clip_norm", c.name, err)
		}
	}
}
