package modelmix

import (
	"math"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/algorithm"
	"github.com/dptrain/dptrain/algorithm/internal/steptest"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// TestMomentumKeyValidation checks optimizer.modelmix.momentum's checks: μ in [0, 1), never
// with the modelmix accountant stopping or calibrating the run, and only beside a certified
// accountant that covers it; optimizer.update stays sgd.
func TestMomentumKeyValidation(t *testing.T) {
	alg := Algorithm()
	for _, tc := range []struct {
		name     string
		update   string
		momentum float64
		accts    []string
		stop     string
		want     string // "" when the config is valid
	}{
		{"plain step", "sgd", 0, []string{"modelmix", "rdp"}, "modelmix", ""},
		{"momentum under rdp", "sgd", 0.9, []string{"modelmix", "rdp"}, "rdp", ""},
		{"momentum, stop picked", "sgd", 0.9, []string{"modelmix", "rdp"}, "", ""},
		{"momentum under pld", "sgd", 0.5, []string{"pld"}, "", ""},
		{"momentum under modelmix", "sgd", 0.9, []string{"modelmix", "rdp"}, "modelmix", "privacy.stop_accountant: rdp"},
		{"momentum without certified", "sgd", 0.9, []string{"modelmix"}, "", "add rdp"},
		{"negative", "sgd", -0.1, []string{"rdp"}, "", "[0, 1)"},
		{"one", "sgd", 1, []string{"rdp"}, "", "[0, 1)"},
		{"NaN", "sgd", math.NaN(), []string{"rdp"}, "", "[0, 1)"},
		{"update momentum", "momentum", 0, []string{"modelmix", "rdp"}, "", "optimizer.modelmix.momentum"},
		{"update adam", "adam", 0, []string{"modelmix", "rdp"}, "", "momentum or Adam state breaks"},
	} {
		c := algorithm.Config{Optimizer: algorithm.OptimizerConfig{Update: tc.update}, Accountants: tc.accts, StopAccountant: tc.stop}
		errs := alg.Validate(c, &Section{Gap: 0.025, Momentum: tc.momentum})
		var msgs []string
		for _, e := range errs {
			msgs = append(msgs, e.Error())
		}
		got := strings.Join(msgs, "; ")
		switch {
		case tc.want == "" && got != "":
			t.Errorf("%s: %s, want no error", tc.name, got)
		case tc.want != "" && !strings.Contains(got, tc.want):
			t.Errorf("%s: %q, want an error containing %q", tc.name, got, tc.want)
		}
	}
}

// TestMomentumStep checks three noiseless steps of MixMomentum against a hand computation:
// with Table's constant mean gradient g (clipped sum (0.6, 0.5, 0.8) over n·q = 2), the
// velocity after k steps is v_k = μ·v_{k−1} + g + λ·w_{k−1}, and the iterate is
// u·a + (1−u)·b − η·v_k, with (a, b) the widened last two iterates and u the k-th draws of
// the noise stream's U[0,1) (noise multiplier 0 draws nothing else).
func TestMomentumStep(t *testing.T) {
	const q, n, eta, kappa = 0.25, 8, 0.5, 0.2
	tau := kappa * eta
	g := []float64{0.3, 0.25, 0.4}
	for _, tc := range []struct {
		name   string
		mu, wd float64
		rule   string
	}{
		{"plain", 0, 0, "sgd"},
		{"heavy ball", 0.9, 0, "momentum"},
		{"heavy ball with weight decay", 0.5, 0.1, "momentum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rule, err := optim.NewSGD(tc.wd)
			if err != nil {
				t.Fatal(err)
			}
			o, err := New(Config{NoiseMultiplier: 0, ClipNorm: 1, Schedule: optim.Constant{Rate: eta}, MixRatio: kappa, Rule: rule, Momentum: tc.mu}, optim.NewSeededNoise(6))
			if err != nil {
				t.Fatal(err)
			}
			if o.UpdateRule() != tc.rule || o.Stateful() != (tc.mu > 0) {
				t.Errorf("UpdateRule %q, Stateful %v; want %q, %v", o.UpdateRule(), o.Stateful(), tc.rule, tc.mu > 0)
			}
			m := &steptest.Table{Theta: []float32{0.5, -1, 2}}
			b := data.Batch{X: []float32{3, 0, 4, 0, 0.5, 0}, Y: make([]int32, 2), N: 2}
			info := steptest.Drawn(data.SchemePoisson, n, q*float64(n), 0, 0)
			rng := optim.NewSeededNoise(6).Rand() // the optimizer's stream, replayed
			w := []float64{0.5, -1, 2}
			prev := append([]float64(nil), w...) // w_{−1} = w_0
			v := make([]float64, 3)
			for k := 1; k <= 3; k++ {
				if _, err := o.Step(m, b, info); err != nil {
					t.Fatal(err)
				}
				for j := range w {
					a, bb := w[j], prev[j]
					v[j] = tc.mu*v[j] + g[j] + tc.wd*a
					v[j] = float64(float32(v[j]))
					a, bb = widen(a, bb, tau)
					u := rng.Float64()
					w[j], prev[j] = float64(float32(u*a+(1-u)*bb-eta*v[j])), float64(float32(a))
				}
				for j := range w {
					if math.Abs(float64(m.Theta[j])-w[j]) > 1e-6 || math.Abs(float64(o.prev[j])-prev[j]) > 1e-6 {
						t.Fatalf("step %d, coordinate %d: w = %v, previous %v; hand computation %v, %v", k, j, m.Theta[j], o.prev[j], w[j], prev[j])
					}
					if tc.mu > 0 && math.Abs(float64(o.vel[j])-v[j]) > 1e-6 {
						t.Fatalf("step %d, coordinate %d: velocity %v, want %v", k, j, o.vel[j], v[j])
					}
				}
			}
			if tc.mu == 0.9 {
				// No weight decay: v_3 = (1 + μ + μ²)·g.
				for j := range g {
					if want := 2.71 * g[j]; math.Abs(float64(o.vel[j])-want) > 1e-6 {
						t.Errorf("velocity after 3 steps %v, want 2.71·g = %v", o.vel[j], want)
					}
				}
			}
			if tc.mu == 0 && o.vel != nil {
				t.Error("plain ModelMix keeps a velocity")
			}
		})
	}
}

// TestMomentumCheckpoint checks that the velocity is saved and restored, and that a momentum
// run's checkpoint without it, or a plain run's checkpoint with one, is refused.
func TestMomentumCheckpoint(t *testing.T) {
	cfg := Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.1}, MixRatio: 0.1, Momentum: 0.9}
	o, _ := New(cfg, optim.NewSeededNoise(1))
	m := &steptest.Table{Theta: []float32{0.5, -1}}
	b := data.Batch{X: []float32{1, 0}, Y: make([]int32, 1), N: 1}
	if _, err := o.Step(m, b, steptest.Drawn(data.SchemePoisson, 4, 0.5*4, 0, 0)); err != nil {
		t.Fatal(err)
	}
	vecs, sc := o.State()
	if len(vecs[stateVelocity]) != 2 {
		t.Fatalf("state %v has no velocity", vecs)
	}
	r, _ := New(cfg, optim.NewSeededNoise(2))
	if err := r.Restore(vecs, sc); err != nil || r.vel[0] != o.vel[0] || r.vel[1] != o.vel[1] {
		t.Errorf("restore: %v, velocity %v, want %v", err, r.vel, o.vel)
	}
	plain := cfg
	plain.Momentum = 0
	p, _ := New(plain, optim.NewSeededNoise(3))
	if err := p.Restore(vecs, sc); err == nil || !strings.Contains(err.Error(), "velocity") {
		t.Errorf("plain ModelMix restoring a momentum checkpoint: %v", err)
	}
	delete(vecs, stateVelocity)
	if err := r.Restore(vecs, sc); err == nil || !strings.Contains(err.Error(), "velocity") {
		t.Errorf("momentum checkpoint without velocity: %v", err)
	}
	if _, err := New(Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.1}, MixRatio: 0.1, Momentum: 1}, optim.NewSeededNoise(1)); err == nil {
		t.Error("momentum 1 accepted")
	}
}
