package dptest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// identity is a gradient oracle whose per-example gradient is the example itself.
type identity struct{ p []float32 }

func (m *identity) Params() []float32 { return m.p }

func (m *identity) ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error) {
	d := len(m.p)
	clear(grad)
	for i := range b.N {
		x := b.X[i*d : (i+1)*d]
		var s float64
		for _, v := range x {
			s += float64(v) * float64(v)
		}
		norms[i] = math.Sqrt(s)
		f := min(1, clip/norms[i])
		if math.IsNaN(f) || math.IsInf(norms[i], 0) {
			f = 0 // a total per-example function: a non-finite contribution counts as zero
		}
		for j, v := range x {
			grad[j] += float32(f * float64(v))
		}
	}
	return data.Stats{N: b.N}, nil
}

func (m *identity) PerSampleGradSum(b data.Batch, f func(int, []float32), grad []float32) (data.Stats, error) {
	panic("not used")
}

// sumStep releases the batch's clipped sum (clip = +Inf: the plain sum, a leak), noise free,
// and declares sensitivity c.
type sumStep struct {
	clip, c, lr float64
}

func (s sumStep) Step(m optim.GradientOracle, b data.Batch, info data.BatchInfo) (optim.Result, error) {
	p := m.Params()
	g := make([]float32, len(p))
	if _, err := m.ClippedGradSum(b, s.clip, g, make([]float64, b.N)); err != nil {
		return optim.Result{}, err
	}
	r := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Sampling(info.Scheme()), Neighbouring: accounting.ReplaceOne,
		NoiseMultiplier: 1, Sensitivity: s.c, StepSize: s.lr, BatchSize: info.BatchSize(), DatasetSize: info.DatasetSize(), Count: 1}
	for j := range p {
		p[j] -= float32(s.lr * float64(g[j]) / float64(info.BatchSize()))
	}
	return optim.Result{Records: []accounting.Step{r}, StepSize: s.lr}, nil
}

func (sumStep) UpdateRule() string { return "sgd" }
func (sumStep) Stateful() bool     { return false }
func (sumStep) Steps() int         { return 1 }

func TestMeasureHoldsAClippedSumAndCatchesAnUnclippedOne(t *testing.T) {
	const n, dim, c = 16, 5, 1.0
	s, err := data.NewSampler(data.SchemeShuffled, 100, n, 1, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	info := data.PlannedBatch(s, 0)
	rng := rand.New(rand.NewPCG(3, 4))
	x, y := Random(n, dim, 3, 1, rng)
	b := data.Batch{N: n, X: x, Y: y}
	for _, tc := range []struct {
		name string
		clip float64
		ok   bool
	}{
		{"clipped", c, true},
		{"unclipped", math.Inf(1), false},
	} {
		e := Experiment{Info: info, New: func() (optim.Optimizer, optim.GradientOracle, error) {
			return sumStep{clip: tc.clip, c: c, lr: 0.5}, &identity{p: make([]float32, dim)}, nil
		}}
		for _, ex := range Crafted(dim, 1, rng)[:1] { // "large": ‖x‖ ≈ 10⁴, far above C
			d := With(b, 7, ex.X, 0)
			dn := With(d, 7, make([]float32, dim), 1)
			ref, err := Run(e, d)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ref.Measure(dn, Replace)
			if err != nil {
				t.Fatal(err)
			}
			again, err := Measure(e, d, dn, Replace)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || got[0] != again[0] {
				t.Fatalf("%s: the step on D measured once gives %+v, run again %+v", tc.name, got, again)
			}
			if got[0].OK() != tc.ok {
				t.Errorf("%s: %v, OK() = %v, want %v", tc.name, got[0], got[0].OK(), tc.ok)
			}
		}
	}
}
