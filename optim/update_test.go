package optim

import (
	"math"
	"testing"
)

func TestUpdateRules(t *testing.T) {
	sgd, _ := NewSGD(0.01)
	heavy, _ := NewMomentum(0.9, false, 0)
	nesterov, _ := NewMomentum(0.9, true, 0)
	adam, _ := NewAdam(0.9, 0.999, 1e-8, 0, false)
	adamw, _ := NewAdam(0.9, 0.999, 1e-8, 0.1, true)
	for _, tc := range []struct {
		name  string
		rule  UpdateRule
		theta []float32
		grads [][]float32
		lr    float64
		want  []float64 // hand-computed
	}{
		// θ − η(g + λθ): 1 − 0.1·(0.5 + 0.01) = 0.949; −2 − 0.1·(0.5 − 0.02) = −2.048.
		{"sgd", sgd, []float32{1, -2}, [][]float32{{0.5, 0.5}}, 0.1, []float64{0.949, -2.048}},
		// v = 1, θ = −0.1; v = 1.9, θ = −0.29.
		{"heavy ball", heavy, []float32{0}, [][]float32{{1}, {1}}, 0.1, []float64{-0.29}},
		// θ = −0.1·(1 + 0.9) = −0.19; v = 1.9, θ = −0.19 − 0.1·(1 + 1.71) = −0.461.
		{"nesterov", nesterov, []float32{0}, [][]float32{{1}, {1}}, 0.1, []float64{-0.461}},
		// t=1: m̂ = 1, v̂ = 1 → θ = −0.1/(1+1e-8). t=2, g = −1: m = 0.09 − 0.1 = −0.01,
		// m̂ = −0.01/0.19; v = 0.000999 + 0.001 = 0.001999, v̂ = 0.001999/0.001999 = 1.
		{"adam", adam, []float32{0}, [][]float32{{1}, {-1}}, 0.1, []float64{-0.1/(1+1e-8) + 0.1*(0.01/0.19)/(1+1e-8)}},
		// AdamW: θ ← θ(1 − ηλ) − η·m̂/(√v̂+ε) = 2·0.99 − 0.1·1/(1+1e-8).
		{"adamw", adamw, []float32{2}, [][]float32{{3}}, 0.1, []float64{2*0.99 - 0.1/(1+1e-8)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th := append([]float32(nil), tc.theta...)
			for _, g := range tc.grads {
				tc.rule.Apply(th, g, tc.lr)
			}
			for i, w := range tc.want {
				if math.Abs(float64(th[i])-w) > 1e-6 {
					t.Errorf("θ[%d] = %v, want %v", i, th[i], w)
				}
			}
		})
	}
}

func TestUpdateRuleState(t *testing.T) {
	sgd, _ := NewSGD(0)
	m0, _ := NewMomentum(0, false, 0)
	m9, _ := NewMomentum(0.9, true, 0)
	adam, _ := NewAdam(0.9, 0.999, 1e-8, 0, false)
	for _, tc := range []struct {
		rule     UpdateRule
		name     string
		stateful bool
	}{{sgd, "sgd", false}, {m0, "momentum", false}, {m9, "momentum", true}, {adam, "adam", true}} {
		if tc.rule.Name() != tc.name || tc.rule.Stateful() != tc.stateful {
			t.Errorf("%T: Name %q Stateful %v, want %q %v", tc.rule, tc.rule.Name(), tc.rule.Stateful(), tc.name, tc.stateful)
		}
	}
	for _, f := range []func() error{
		func() error { _, err := NewSGD(-1); return err },
		func() error { _, err := NewMomentum(1, false, 0); return err },
		func() error { _, err := NewMomentum(-0.1, false, 0); return err },
		func() error { _, err := NewAdam(1, 0.999, 1e-8, 0, false); return err },
		func() error { _, err := NewAdam(0.9, 0.999, 0, 0, false); return err },
		func() error { _, err := NewAdam(0.9, 0.999, 1e-8, math.NaN(), false); return err },
	} {
		if f() == nil {
			t.Error("invalid update rule parameters accepted")
		}
	}
}
