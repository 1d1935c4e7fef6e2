package modelmix

import (
	"math"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/rdp"
)

var sgdRun = accounting.Run{UpdateRule: "sgd"}

// mmStep is the step record `dptrain account` builds: clip units (Sensitivity 1).
func mmStep(q, z, w float64, p, count int) accounting.Step {
	return accounting.Step{
		Mechanism: accounting.Gaussian, Sampling: accounting.Poisson,
		NoiseMultiplier: z, SampleRate: q, Sensitivity: 1, NoiseStd: z,
		MixWidth: w, LinfParts: p, Count: count,
	}
}

func epsilonOf(t *testing.T, opts Options, delta float64, steps ...accounting.Step) accounting.Guarantee {
	t.Helper()
	a, err := NewWithOptions(sgdRun, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if err := a.Compose(s); err != nil {
			t.Fatal(err)
		}
	}
	g, err := a.Epsilon(delta)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestFig3Rows(t *testing.T) {
	// seed-003 §4.8 / Appendix Z "Fig.3 row check": z = 0.46751699958522286 (regular DP-SGD at
	// ε = 200), c = 20, q = 0.02, T = 5000, δ = 1e-5, orders 2..256. Expected values from the
	// reading's Python reference accountant run here (full precision), with the paper's classic
	// conversion and with the improved one of accounting.RDPToEpsilon. The paper's own Fig. 3
	// values (57.2/17.9/15.3, 40.4/9.0/7.9, 31.7/5.4/4.8) are not reproducible from its formula
	// (seed-003 §4.8) and are not used as oracles.
	const z, c, q, T, delta = 0.46751699958522286, 20.0, 0.02, 5000, 1e-5
	tests := []struct {
		width           float64
		p               int
		classic         float64
		classicOrder    float64
		improved        float64
		improvedOrderAt float64
	}{
		{75, 1, 35.26496290998826, 2, 33.878668548868376, 2},
		{75, 25, 12.161401130280982, 3, 11.206629877838763, 3},
		{75, 100, 11.62359550123001, 3, 10.66882424878779, 3},
		{150, 1, 23.40304938811755, 2, 22.016755026997664, 2},
		{150, 25, 6.928179360341574, 5, 6.178893312510629, 4},
		{150, 100, 6.5201669716470185, 5, 5.894663942224284, 5},
		{300, 1, 17.461521801883926, 2, 16.07522744076404, 2},
		{300, 25, 4.312577041540429, 6, 3.7719035909008634, 6},
		{300, 100, 4.098549611155095, 7, 3.6147431502831506, 6},
	}
	for _, tt := range tests {
		// The step as an optimizer declares it, in the paper's units.
		s := accounting.Step{
			Mechanism: accounting.Gaussian, Sampling: accounting.Poisson,
			NoiseMultiplier: z, SampleRate: q, Sensitivity: c, NoiseStd: z * c,
			MixWidth: tt.width, LinfParts: tt.p, Count: T,
		}
		g := epsilonOf(t, Options{ClassicConversion: true}, delta, s)
		if !relClose(g.Epsilon, tt.classic, 1e-7, 1e-12) || g.Order != tt.classicOrder {
			t.Errorf("L=%v p=%d classic: ε = %.10g at α=%v, want %.10g at α=%v", tt.width, tt.p, g.Epsilon, g.Order, tt.classic, tt.classicOrder)
		}
		g = epsilonOf(t, Options{}, delta, s)
		if !relClose(g.Epsilon, tt.improved, 1e-7, 1e-12) || g.Order != tt.improvedOrderAt {
			t.Errorf("L=%v p=%d: ε = %.10g at α=%v, want %.10g at α=%v", tt.width, tt.p, g.Epsilon, g.Order, tt.improved, tt.improvedOrderAt)
		}
		if g.Label != accounting.Paper || g.Accountant != Name || g.Delta != delta {
			t.Errorf("L=%v p=%d: guarantee %+v, want label paper, accountant %q", tt.width, tt.p, g, Name)
		}
	}
}

func TestScheduleAndGaussianVectors(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		steps   []accounting.Step
		want    float64
		label   accounting.Label
		atOrder float64
	}{
		// DESIGN.md's TF Privacy case (q = 256/60000, σ = 1.1, 60 epochs, δ = 1e-5: ε ≈ 2.60 with
		// fractional orders); integer orders 2..256, reading's reference with L = 0.
		{"dp-sgd tf-privacy", Options{}, []accounting.Step{mmStep(256.0/60000, 1.1, 0, 0, 14062)}, 2.596981178594758, accounting.Certified, 8},
		{"dp-sgd tf-privacy classic", Options{ClassicConversion: true}, []accounting.Step{mmStep(256.0/60000, 1.1, 0, 0, 14062)}, 3.0090995257320934, accounting.Certified, 9},
		// §5.3 transfer learning: q = 1024/50000, 0.85 × 2.7921 noise, τ-thirds schedule
		// (L = 7.68, 5.12, 2.56 with c = 0.1), T = 1500, p = 1. The reading reports 0.579.
		{"transfer thirds classic", Options{ClassicConversion: true}, []accounting.Step{
			mmStep(1024.0/50000, 0.85*2.7921, 76.8, 1, 500),
			mmStep(1024.0/50000, 0.85*2.7921, 51.2, 1, 500),
			mmStep(1024.0/50000, 0.85*2.7921, 25.6, 1, 500),
		}, 0.578945940538323, accounting.Paper, 38},
		{"transfer thirds", Options{}, []accounting.Step{
			mmStep(1024.0/50000, 0.85*2.7921, 76.8, 1, 500),
			mmStep(1024.0/50000, 0.85*2.7921, 51.2, 1, 500),
			mmStep(1024.0/50000, 0.85*2.7921, 25.6, 1, 500),
		}, 0.44666204336985266, accounting.Paper, 33},
	}
	for _, tt := range tests {
		g := epsilonOf(t, tt.opts, 1e-5, tt.steps...)
		if !relClose(g.Epsilon, tt.want, 1e-7, 1e-12) || g.Label != tt.label || g.Order != tt.atOrder {
			t.Errorf("%s: ε = %.12g (%s, α=%v), want %.12g (%s, α=%v)", tt.name, g.Epsilon, g.Label, g.Order, tt.want, tt.label, tt.atOrder)
		}
	}
}

func TestCountIsRepetition(t *testing.T) {
	one := mmStep(0.02, 0.6, 3.75, 25, 1)
	var many []accounting.Step
	for range 300 {
		many = append(many, one)
	}
	batched := one
	batched.Count = 300
	a := epsilonOf(t, Options{}, 1e-5, many...)
	b := epsilonOf(t, Options{}, 1e-5, batched)
	if math.Abs(a.Epsilon-b.Epsilon) > 1e-12*b.Epsilon || a.Order != b.Order {
		t.Errorf("300 single steps give ε = %v (α=%v), one step with Count 300 gives %v (α=%v)", a.Epsilon, a.Order, b.Epsilon, b.Order)
	}
}

func TestEpsilonMonotone(t *testing.T) {
	const q, delta = 0.02, 1e-5
	eps := func(z, w float64, p, steps int) float64 {
		return epsilonOf(t, Options{}, delta, mmStep(q, z, w, p, steps)).Epsilon
	}
	// Below plain DP-SGD at the same noise and steps, and decreasing in the width.
	for _, p := range []int{1, 100} {
		prev := eps(0.8, 0, p, 2000)
		for _, w := range []float64{0.5, 2, 3.75, 10, 40} {
			e := eps(0.8, w, p, 2000)
			if !(e < prev) {
				t.Errorf("p=%d: ε = %v at W=%v is not below %v at the previous width", p, e, w, prev)
			}
			prev = e
		}
	}
	// Decreasing in the noise, increasing in the number of steps.
	prev := math.Inf(1)
	for _, z := range []float64{0.5, 0.6, 0.8, 1.2, 2} {
		e := eps(z, 3.75, 1, 2000)
		if !(e < prev) {
			t.Errorf("ε = %v at Z=%v is not below %v at the previous noise", e, z, prev)
		}
		prev = e
	}
	prev = 0
	for _, steps := range []int{1, 10, 100, 1000, 5000} {
		e := eps(0.8, 3.75, 25, steps)
		if !(e > prev) {
			t.Errorf("ε = %v after %d steps is not above %v after fewer", e, steps, prev)
		}
		prev = e
	}
}

func TestRunChecks(t *testing.T) {
	// A run that declares no update rule cannot be checked: refused at construction.
	if _, err := New(accounting.Run{}); err == nil || !strings.Contains(err.Error(), "plain SGD") {
		t.Errorf("no update rule: err = %v, want a refusal naming plain SGD", err)
	}
	// A rule that carries noisy gradients across steps (ModelMix's momentum opt-in declares
	// "momentum"): the records compose, every Epsilon is a refusal naming why, never a number,
	// while the certified sampled-Gaussian RDP of the same records still gives ε.
	steps := []accounting.Step{mmStep(0.1365, 2.2, 204.8, 100, 400), mmStep(0.1365, 2.2, 102.4, 100, 400)}
	for _, tc := range []struct {
		rule string
		want []string
	}{
		{"momentum", []string{"momentum", "plain SGD", "rdp"}},
		{"nesterov", []string{"nesterov", "plain SGD"}},
		{"adam", []string{"adam", "plain SGD"}},
	} {
		run := accounting.Run{UpdateRule: tc.rule, DatasetSize: 60000}
		a, err := New(run)
		if err != nil {
			t.Fatalf("%s: %v, want an accountant that refuses at Epsilon", tc.rule, err)
		}
		cert, err := rdp.New(run)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range steps {
			if err := a.Compose(s); err != nil {
				t.Fatalf("%s: Compose: %v", tc.rule, err)
			}
			if err := cert.Compose(s); err != nil {
				t.Fatal(err)
			}
		}
		for _, acct := range []accounting.Accountant{a, a.Clone()} {
			g, err := acct.Epsilon(1e-5)
			if err == nil || !math.IsNaN(g.Epsilon) {
				t.Errorf("%s: ε = %v, err = %v: want a refusal and no number", tc.rule, g.Epsilon, err)
				continue
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: refusal %q does not name %q", tc.rule, err, w)
				}
			}
		}
		g, err := cert.Epsilon(1e-5)
		if err != nil || g.Label != accounting.Certified || !(g.Epsilon > 0) || math.IsInf(g.Epsilon, 0) {
			t.Errorf("%s: certified RDP of the same records: %+v, %v", tc.rule, g, err)
		}
	}
	// With the plain step the same records give a (smaller, paper-labelled) number.
	a, _ := New(sgdRun)
	for _, s := range steps {
		_ = a.Compose(s)
	}
	if g, err := a.Epsilon(1e-5); err != nil || !(g.Epsilon > 0) {
		t.Errorf("sgd: %+v, %v", g, err)
	}
	// The threat model reveals every iterate (seed-003 §4.1): releasing all of them is fine.
	for _, last := range []bool{false, true} {
		if _, err := New(accounting.Run{UpdateRule: "sgd", LastIterateOnly: last}); err != nil {
			t.Errorf("LastIterateOnly=%v: %v", last, err)
		}
	}
	if _, err := NewWithOptions(sgdRun, Options{MaxOrder: 1}); err == nil {
		t.Error("max order 1: want an error")
	}
}

func TestComposeRefuses(t *testing.T) {
	good := mmStep(0.02, 0.8, 3.75, 1, 1)
	tests := []struct {
		name   string
		modify func(*accounting.Step)
		want   string
	}{
		{"laplace-like mechanism", func(s *accounting.Step) { s.Mechanism = accounting.SampledWithRejectionGaussian }, "Gaussian"},
		{"no mechanism", func(s *accounting.Step) { s.Mechanism = "" }, "mechanism"},
		{"shuffled", func(s *accounting.Step) { s.Sampling = accounting.Shuffled }, "Poisson"},
		{"shuffled once", func(s *accounting.Step) { s.Sampling = accounting.ShuffledOnce }, "Poisson"},
		{"rejection", func(s *accounting.Step) { s.Sampling = accounting.PoissonWithRejection }, "Poisson"},
		{"replace-one", func(s *accounting.Step) { s.Neighbouring = accounting.ReplaceOne }, "add/remove"},
		{"negative width", func(s *accounting.Step) { s.MixWidth = -1 }, "mixing width"},
		{"nan width", func(s *accounting.Step) { s.MixWidth = math.NaN() }, "mixing width"},
		{"negative parts", func(s *accounting.Step) { s.LinfParts = -1 }, "l∞"},
		{"width without clip norm", func(s *accounting.Step) { s.Sensitivity = 0; s.NoiseStd = 0 }, "sensitivity"},
		{"inconsistent noise", func(s *accounting.Step) { s.NoiseStd = 2 * s.NoiseMultiplier }, "inconsistent"},
		{"zero noise", func(s *accounting.Step) { s.NoiseMultiplier = 0; s.NoiseStd = 0 }, "noise multiplier"},
		{"rate above one", func(s *accounting.Step) { s.SampleRate = 2 }, "sample rate"},
	}
	a, err := New(sgdRun)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Compose(good); err != nil {
		t.Fatal(err)
	}
	before, err := a.Epsilon(1e-5)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		s := good
		tt.modify(&s)
		err := a.Compose(s)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", tt.name, err, tt.want)
		}
	}
	after, err := a.Epsilon(1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if a.Steps() != 1 || after != before {
		t.Errorf("refused steps changed the accountant: %d steps, %+v (was %+v)", a.Steps(), after, before)
	}
	// A full-batch step is Poisson sampling with q = 1.
	fb := good
	fb.Sampling, fb.SampleRate = accounting.FullBatch, 1
	if err := a.Compose(fb); err != nil {
		t.Errorf("full batch: %v", err)
	}
}

func TestLabelAndEmpty(t *testing.T) {
	a, err := New(sgdRun)
	if err != nil {
		t.Fatal(err)
	}
	g, err := a.Epsilon(1e-5)
	if err != nil || g.Epsilon != 0 || g.Label != accounting.Certified {
		t.Errorf("no steps: %+v, %v; want ε = 0, certified", g, err)
	}
	if _, err := a.Epsilon(0); err == nil {
		t.Error("δ = 0: want an error")
	}
	if err := a.Compose(mmStep(0.02, 1, 0, 0, 10)); err != nil {
		t.Fatal(err)
	}
	if a.Label() != accounting.Certified {
		t.Errorf("after unmixed steps: label %s, want certified (sampled Gaussian)", a.Label())
	}
	if err := a.Compose(mmStep(0.02, 1, 5, 0, 10)); err != nil {
		t.Fatal(err)
	}
	if a.Label() != accounting.Paper {
		t.Errorf("after a mixed step: label %s, want paper", a.Label())
	}
}

func TestClone(t *testing.T) {
	a, err := New(sgdRun)
	if err != nil {
		t.Fatal(err)
	}
	s := mmStep(0.02, 0.8, 3.75, 1, 100)
	if err := a.Compose(s); err != nil {
		t.Fatal(err)
	}
	before, _ := a.Epsilon(1e-5)
	b := a.Clone()
	if err := b.Compose(s); err != nil {
		t.Fatal(err)
	}
	after, _ := a.Epsilon(1e-5)
	cloned, _ := b.Epsilon(1e-5)
	if after != before {
		t.Errorf("composing into the clone changed the original: %v → %v", before.Epsilon, after.Epsilon)
	}
	// The clone composed 200 steps: ε must match a fresh accountant's for Count 200.
	s.Count = 200
	want := epsilonOf(t, Options{}, 1e-5, s)
	if math.Abs(cloned.Epsilon-want.Epsilon) > 1e-12*want.Epsilon {
		t.Errorf("clone: ε = %v, fresh accountant %v", cloned.Epsilon, want.Epsilon)
	}
}
