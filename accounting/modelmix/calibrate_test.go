package modelmix

import (
	"testing"
)

func TestCalibrateNoise(t *testing.T) {
	// Expected Z from bisection with the reading's Python reference accountant (Appendix Z) to
	// a relative 1e-10, orders 2..256.
	tests := []struct {
		name          string
		opts          Options
		target, delta float64
		q             float64
		steps         int
		w             float64
		p             int
		want          float64
	}{
		// seed-003 §4.8: regular DP-SGD at ε = 200 (Fig. 3 baseline), z = 0.467517.
		{"fig3 baseline", Options{ClassicConversion: true}, 200, 1e-5, 0.02, 5000, 0, 1, 0.4675169995927717},
		// seed-003 §6.4: CIFAR-10 ResNet-20 ModelMix (q = 0.03, T = 3500, L = 225, c = 20,
		// p = 100) at ε = 8, z ≈ 0.342 in the reading.
		{"cifar10 eps 8", Options{ClassicConversion: true}, 8, 1e-5, 0.03, 3500, 225.0 / 20, 100, 0.34163850001277746},
		{"cifar10 eps 4 improved", Options{}, 4, 1e-5, 0.03, 3500, 225.0 / 20, 100, 0.7811342870481895},
		{"fig3 L=75 eps 30 improved", Options{}, 30, 1e-5, 0.02, 5000, 3.75, 1, 0.4795714782398136},
	}
	for _, tt := range tests {
		z, err := tt.opts.CalibrateNoise(tt.target, tt.delta, tt.q, tt.steps, tt.w, tt.p)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !relClose(z, tt.want, 1e-7, 1e-7) {
			t.Errorf("%s: Z = %.12g, want %.12g", tt.name, z, tt.want)
		}
		// Never above the target at the returned Z; above it just below (the bracket's lower
		// end is within 1e-9 relative).
		eps := func(z float64) float64 {
			return epsilonOf(t, tt.opts, tt.delta, mmStep(tt.q, z, tt.w, tt.p, tt.steps)).Epsilon
		}
		if e := eps(z); e > tt.target {
			t.Errorf("%s: ε(Z = %v) = %v exceeds the target %v", tt.name, z, e, tt.target)
		}
		if e := eps(z * (1 - 2e-9)); e <= tt.target {
			t.Errorf("%s: ε(Z·(1−2e-9)) = %v is within the target %v: Z is not the smallest", tt.name, e, tt.target)
		}
	}
	// The package-level function uses the default options.
	z, err := CalibrateNoise(30, 1e-5, 0.02, 5000, 3.75, 1)
	if err != nil || !relClose(z, 0.4795714782398136, 1e-7, 1e-7) {
		t.Errorf("CalibrateNoise = %v, %v; want 0.47957147824", z, err)
	}
}

func TestCalibrateNoiseErrors(t *testing.T) {
	tests := []struct {
		name          string
		target, delta float64
		q             float64
		steps         int
		w             float64
		p             int
	}{
		{"zero target", 0, 1e-5, 0.02, 100, 1, 1},
		{"bad delta", 1, 1, 0.02, 100, 1, 1},
		{"bad rate", 1, 1e-5, 0, 100, 1, 1},
		{"no steps", 1, 1e-5, 0.02, 0, 1, 1},
		{"negative width", 1, 1e-5, 0.02, 100, -1, 1},
		{"negative parts", 1, 1e-5, 0.02, 100, 1, -1},
		{"target too loose", 1e6, 1e-5, 0.02, 1, 0, 1},
		{"target too tight", 1e-9, 1e-5, 0.5, 1000, 0, 1},
	}
	for _, tt := range tests {
		if z, err := CalibrateNoise(tt.target, tt.delta, tt.q, tt.steps, tt.w, tt.p); err == nil {
			t.Errorf("%s: Z = %v, want an error", tt.name, z)
		}
	}
}
