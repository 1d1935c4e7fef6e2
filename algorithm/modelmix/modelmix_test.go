package modelmix

import (
	"math"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/algorithm/internal/steptest"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// widen is seed-003 Algorithm 1 lines 6–8 with sign(0) := +1, written out for the tests.
func widen(a, b, tau float64) (float64, float64) {
	if math.Abs(a-b) >= tau {
		return a, b
	}
	s := 1.0
	if a < b {
		s = -1
	}
	return a + s*tau/2, b - s*tau/2
}

// TestMixBoxAndGap checks that every mixed point lies in the box spanned by the widened
// iterates (shifted by the gradient step), that every side is at least τ, and that the stored
// previous iterate is the widened w_{k−1}.
func TestMixBoxAndGap(t *testing.T) {
	const d, tau, eta, wd = 3000, 0.05, 0.3, 0.01
	noise := optim.NewSeededNoise(4)
	w1 := make([]float32, d)
	w2 := make([]float32, d)
	g := make([]float32, d)
	noise.FillGaussian(w1, 1)
	noise.FillGaussian(g, 2)
	for j := range w2 {
		switch j % 4 {
		case 0: // equal: gap 0
			w2[j] = w1[j]
		case 1: // small positive gap
			w2[j] = w1[j] - float32(tau/3)
		case 2: // small negative gap
			w2[j] = w1[j] + float32(tau/7)
		default: // wide gap
			w2[j] = w1[j] + 1
		}
	}
	a0 := append([]float32(nil), w1...)
	b0 := append([]float32(nil), w2...)
	Mix(w1, w2, g, eta, tau, wd, noise)
	for j := range w1 {
		a, b := widen(float64(a0[j]), float64(b0[j]), tau)
		if math.Abs(a-b) < tau*(1-1e-12) {
			t.Fatalf("coordinate %d: widened gap %v < τ", j, math.Abs(a-b))
		}
		if j%4 == 0 && a != float64(a0[j])+tau/2 {
			t.Fatalf("coordinate %d: zero gap widened to %v, want w + τ/2 (sign(0) = +1)", j, a)
		}
		if w2[j] != float32(a) {
			t.Fatalf("coordinate %d: stored previous iterate %v, want widened w_{k−1} = %v", j, w2[j], a)
		}
		mixed := float64(w1[j]) + eta*(float64(g[j])+wd*float64(a0[j]))
		lo, hi := math.Min(a, b), math.Max(a, b)
		if slack := 1e-6 * (1 + math.Abs(mixed)); mixed < lo-slack || mixed > hi+slack {
			t.Fatalf("coordinate %d: mixed point %v outside the box [%v, %v]", j, mixed, lo, hi)
		}
	}
}

// TestMixUniform checks that the mixed point is uniform on the box: 200k coordinates with box
// [0, 1] binned into 20 cells against χ²₁₉, and mean at the midpoint.
func TestMixUniform(t *testing.T) {
	const d, bins = 200000, 20
	w1 := make([]float32, d)
	w2 := make([]float32, d)
	for j := range w1 {
		w1[j] = 1
	}
	Mix(w1, w2, make([]float32, d), 0.1, 0.5, 0, optim.NewSeededNoise(8))
	var counts [bins]float64
	var sum float64
	for _, v := range w1 {
		if v < 0 || v > 1 {
			t.Fatalf("mixed point %v outside [0, 1]", v)
		}
		counts[min(int(v*bins), bins-1)]++
		sum += float64(v)
	}
	var chi2 float64
	for _, c := range counts {
		e := float64(d) / bins
		chi2 += (c - e) * (c - e) / e
	}
	if _, hi := steptest.Chi2Bounds(bins-1, 1e-4); chi2 > hi {
		t.Errorf("χ² = %v > %v: mixed points are not uniform on the box", chi2, hi)
	}
	// Var U = 1/12.
	if m := sum / d; math.Abs(m-0.5) > 4*math.Sqrt(1.0/12/d) {
		t.Errorf("mean mixed point %v, want the midpoint 0.5", m)
	}
}

func TestModelMixRecord(t *testing.T) {
	// seed-003 §5.2 CIFAR-10: q = 0.03, n = 50000, c = 20, p = 100, η = 0.15, τ = 0.15η:
	// L = τ·n·q/η = 0.15·1500 = 225 (seed-003 §4.3 table).
	sgd, _ := optim.NewSGD(2e-4)
	o, err := New(Config{NoiseMultiplier: 0.5, ClipNorm: 20, LinfParts: 100,
		Schedule: optim.Constant{Rate: 0.15}, MixRatio: 0.15, Rule: sgd}, optim.NewSeededNoise(1))
	if err != nil {
		t.Fatal(err)
	}
	if o.Stateful() || o.UpdateRule() != "sgd" {
		t.Error("ModelMix declares state or a rule other than sgd")
	}
	m := &steptest.Zero{Theta: make([]float32, 100)}
	res, err := o.Step(m, data.Batch{N: 1480}, steptest.Drawn(data.SchemePoisson, 50000, (0.03)*float64(50000), 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Records[0]
	want := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, Neighbouring: accounting.AddRemove,
		NoiseMultiplier: 0.5, SampleRate: 0.03, Count: 1, Sensitivity: 20, NoiseStd: 10, StepSize: 0.15,
		DatasetSize: 50000, MixWidth: 225, LinfParts: 100}
	if math.Abs(r.MixWidth-want.MixWidth) < 1e-9 {
		r.MixWidth = want.MixWidth
	}
	if r != want {
		t.Errorf("record\n got %+v\nwant %+v", r, want)
	}
	if err := r.Validate(); err != nil {
		t.Error(err)
	}
	if m.Calls != 1 {
		t.Errorf("model called %d times, want 1", m.Calls)
	}
}

func TestModelMixRefusals(t *testing.T) {
	mom, _ := optim.NewMomentum(0.9, false, 0)
	adam, _ := optim.NewAdam(0.9, 0.999, 1e-8, 0, false)
	base := Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.1}, MixRatio: 0.1}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"momentum", func(c *Config) { c.Rule = mom }, "momentum"},
		{"adam", func(c *Config) { c.Rule = adam }, "adam"},
		{"no mixing", func(c *Config) { c.MixRatio = 0 }, "mixing ratio"},
		{"zero threshold", func(c *Config) { c.MixThreshold = optim.Constant{Rate: 0} }, "mixed"},
		{"infinite clip", func(c *Config) { c.NoiseMultiplier = 0; c.ClipNorm = math.Inf(1) }, "finite clip"},
		{"negative p", func(c *Config) { c.LinfParts = -2 }, "parts"},
	} {
		cfg := base
		tc.edit(&cfg)
		if _, err := New(cfg, optim.NewSeededNoise(1)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	o, err := New(base, optim.NewSeededNoise(1))
	if err != nil {
		t.Fatal(err)
	}
	m := &steptest.Zero{Theta: make([]float32, 4)}
	for _, tc := range []struct {
		info data.BatchInfo
		want string
	}{
		{steptest.Drawn(data.SchemeShuffled, 10, float64(2), 0, 0), "Poisson"},
	} {
		if _, err := o.Step(m, data.Batch{N: 2}, tc.info); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one mentioning %q", tc.info, err, tc.want)
		}
	}
	// A threshold schedule that reaches 0 mid-run stops the run at that step.
	o, _ = New(Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.1},
		MixThreshold: optim.StepDecay{Rate: 0.01, Gamma: 0, Every: 2}}, optim.NewSeededNoise(1))
	info := steptest.Drawn(data.SchemePoisson, 10, (0.2)*float64(10), 0, 0)
	for k := range 3 {
		if _, err := o.Step(m, data.Batch{N: 2}, info); (err != nil) != (k == 2) {
			t.Errorf("step %d: error %v", k, err)
		}
	}
}

// TestModelMixGradSum checks both clipping paths on hand-computed sums: per-sample gradients
// (3, 4), (0.3, 0.4), (0, −2) at c = 1 are (0.6, 0.8), (0.3, 0.4), (0, −1) after l2 clipping
// (sum (0.9, 0.2)), and (0.5, 0.5), (0.3, 0.4), (0, −0.5) after l∞ truncation at c/√4 = 0.5
// (sum (0.8, 0.4)).
func TestModelMixGradSum(t *testing.T) {
	b := data.Batch{X: []float32{3, 4, 0.3, 0.4, 0, -2}, Y: make([]int32, 3), N: 3}
	for _, tc := range []struct {
		p       int
		want    [2]float64
		clipped int
	}{{1, [2]float64{0.9, 0.2}, 2}, {4, [2]float64{0.8, 0.4}, 2}} {
		o, err := New(Config{NoiseMultiplier: 1, ClipNorm: 1, LinfParts: tc.p, Schedule: optim.Constant{Rate: 0.1}, MixRatio: 0.1}, optim.NewSeededNoise(1))
		if err != nil {
			t.Fatal(err)
		}
		m := &steptest.Table{Theta: make([]float32, 2)}
		o.grad = optim.Resize(o.grad, 2)
		st, err := o.gradSum(m, b)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range tc.want {
			if math.Abs(float64(o.grad[i])-w) > 1e-6 {
				t.Errorf("p = %d: sum %v, want %v", tc.p, o.grad, tc.want)
			}
		}
		if st.Clipped != tc.clipped {
			t.Errorf("p = %d: Clipped = %d, want %d", tc.p, st.Clipped, tc.clipped)
		}
	}
}

// TestModelMixSteps runs two noiseless steps: the first mixes in the box [w0 − τ/2, w0 + τ/2]
// (w_{−1} = w_0, every gap widened), the second in the box of the first two iterates.
func TestModelMixSteps(t *testing.T) {
	const q, n, eta, kappa, c = 0.25, 8, 0.5, 0.2, 1.0
	tau := kappa * eta
	o, err := New(Config{NoiseMultiplier: 0, ClipNorm: c, Schedule: optim.Constant{Rate: eta}, MixRatio: kappa}, optim.NewSeededNoise(6))
	if err != nil {
		t.Fatal(err)
	}
	m := &steptest.Table{Theta: []float32{0.5, -1, 2}}
	b := data.Batch{X: []float32{3, 0, 4, 0, 0.5, 0}, Y: make([]int32, 2), N: 2}
	// Clipped sum (0.6, 0.5, 0.8) over n·q = 2.
	gt := []float64{0.3, 0.25, 0.4}
	info := steptest.Drawn(data.SchemePoisson, n, (q)*float64(n), 0, 0)
	w0 := append([]float32(nil), m.Theta...)
	res, err := o.Step(m, b, info)
	if err != nil {
		t.Fatal(err)
	}
	if r := res.Records[0]; r.Mechanism != accounting.NonPrivate || r.Validate() == nil {
		t.Errorf("non-private ModelMix record not refused: %+v", r)
	}
	w1 := append([]float32(nil), m.Theta...)
	for j := range w0 {
		mixed := float64(w1[j]) + eta*gt[j]
		if math.Abs(mixed-float64(w0[j])) > tau/2+1e-6 {
			t.Errorf("step 1, coordinate %d: mixed point %v outside [w0 ± τ/2] = %v ± %v", j, mixed, w0[j], tau/2)
		}
		if o.prev[j] != float32(float64(w0[j])+tau/2) {
			t.Errorf("step 1, coordinate %d: previous iterate %v, want w0 + τ/2 = %v", j, o.prev[j], float64(w0[j])+tau/2)
		}
	}
	prev := append([]float32(nil), o.prev...)
	if _, err := o.Step(m, b, info); err != nil {
		t.Fatal(err)
	}
	for j := range w1 {
		a, bb := widen(float64(w1[j]), float64(prev[j]), tau)
		mixed := float64(m.Theta[j]) + eta*gt[j]
		if mixed < math.Min(a, bb)-1e-6 || mixed > math.Max(a, bb)+1e-6 {
			t.Errorf("step 2, coordinate %d: mixed point %v outside [%v, %v]", j, mixed, math.Min(a, bb), math.Max(a, bb))
		}
	}
	if o.Steps() != 2 {
		t.Errorf("Steps() = %d, want 2", o.Steps())
	}
}
