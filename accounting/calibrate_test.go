package accounting

import (
	"context"
	"errors"
	"math"
	"strings"
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
		s, err := CalibrateNoise(context.Background(), eps, target)
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
	if _, err := CalibrateNoise(context.Background(), eps, 1e-6); err == nil {
		t.Error("unreachable target accepted")
	}
	if s, _ := CalibrateNoise(context.Background(), func(float64) (float64, error) { return 0, nil }, 1); s > 1e-3 {
		t.Errorf("free target: σ = %v, want the floor 1e-3", s)
	}
}

func TestCalibrateNoiseErrors(t *testing.T) {
	failing := func(float64) (float64, error) { return 0, errors.New("boom") }
	if _, err := CalibrateNoise(context.Background(), failing, 1); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("want the accountant's error, got %v", err)
	}
	for _, target := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := CalibrateNoise(context.Background(), func(float64) (float64, error) { return 0, nil }, target); err == nil {
			t.Errorf("target %v accepted", target)
		}
	}
	nan := func(float64) (float64, error) { return math.NaN(), nil }
	if _, err := CalibrateNoise(context.Background(), nan, 1); err == nil {
		t.Error("NaN ε accepted")
	}
}

// Calibration honours its context: a cancelled context stops it before the next evaluation of
// ε, with an error that wraps the context's.
func TestCalibrateNoiseStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	eps := func(sigma float64) (float64, error) {
		if calls++; calls == 3 {
			cancel()
		}
		return 1 / sigma, nil
	}
	if _, err := CalibrateNoise(ctx, eps, 1e-3); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled calibration returned %v, want context.Canceled", err)
	}
	if calls != 3 {
		t.Errorf("ε evaluated %d times, want 3 (none after the cancel)", calls)
	}
	calls = 0
	if _, err := CalibrateNoise(ctx, eps, 1); !errors.Is(err, context.Canceled) || calls != 0 {
		t.Errorf("calibration under a done context: %v after %d evaluations", err, calls)
	}
}
