package accounting

import (
	"testing"
)

func TestCalibrateNoise(t *testing.T) {
	// Full-batch Gaussian composition under the improved conversion, computed here directly:
	// the calibrated σ must meet the target and σ·(1 − 2e-4) must not.
	eps := func(sigma float64) (float64, error) {
		var orders, rdp []float64
		for a := 1.1; a < 300; a += 0.1 {
			orders = append(orders, a)
			rdp = append(rdp, 100*a/(2*sigma*sigma))
		}
		e, _, err := RDPToEpsilon(orders, rdp, 1e-5)
		return e, err
	}
	for _, target := range []float64{0.5, 1, 3, 8, 50} {
		s, err := CalibrateNoise(eps, target)
		if err != nil {
			t.Fatal(err)
		}
		if e, _ := eps(s); e > target {
			t.Errorf("target %v: σ = %v gives ε = %v", target, s, e)
		}
		if e, _ := eps(s * (1 - 2e-4)); e <= target {
			t.Errorf("target %v: σ = %v is not minimal (ε(σ·0.9998) = %v)", target, s, e)
		}
	}
	if _, err := CalibrateNoise(eps, 1e-6); err == nil {
		t.Error("unreachable target accepted")
	}
	if s, _ := CalibrateNoise(func(float64) (float64, error) { return 0, nil }, 1); s > 1e-3 {
		t.Errorf("free target: σ = %v, want the floor 1e-3", s)
	}
}
