package accounting_test

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/rdp"
)

// Calibration round-trips: the σ found meets the target, a slightly smaller σ does not, and
// computing ε at σ independently gives the same guarantee.
func TestCalibrateStepRoundTrip(t *testing.T) {
	newRDP := func() (accounting.Accountant, error) { return rdp.New(accounting.Run{}) }
	step := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, Neighbouring: accounting.AddRemove,
		SampleRate: 256.0 / 60000, Count: 14063, Sensitivity: 1}
	for _, target := range []float64{1, 2.5966, 8} {
		sigma, g, err := accounting.CalibrateStep(context.Background(), newRDP, step, target, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		if g.Epsilon > target {
			t.Errorf("target %v: ε = %v", target, g.Epsilon)
		}
		a, _ := rdp.New(accounting.Run{})
		s := step
		s.NoiseMultiplier = sigma * (1 - 2*accounting.CalibrateTolerance)
		a.Compose(s)
		if g2, _ := a.Epsilon(1e-5); g2.Epsilon <= target {
			t.Errorf("target %v: σ = %v is not minimal: %v also meets it (ε %v)", target, sigma, s.NoiseMultiplier, g2.Epsilon)
		}
		if target == 2.5966 && math.Abs(sigma-1.1) > 2e-3 {
			t.Errorf("the TF Privacy case should calibrate back to σ ≈ 1.1, got %v", sigma)
		}
	}
	if _, _, err := accounting.CalibrateStep(context.Background(), newRDP, step, 1e-4, 1e-5); err == nil {
		t.Error("unreachable target accepted")
	}
	shuffled := step
	shuffled.Sampling = accounting.Shuffled
	if _, _, err := accounting.CalibrateStep(context.Background(), newRDP, shuffled, 1, 1e-5); err == nil {
		t.Error("a step the accountant refuses was calibrated")
	}
}

// CalibrateRecords scales every declared record's noise by σ (records whose noise multiplier
// at σ = 1 is not 1 included) and meets the target with a minimal σ over records that differ
// from step to step.
func TestCalibrateRecordsVaryingSteps(t *testing.T) {
	newRDP := func() (accounting.Accountant, error) { return rdp.New(accounting.Run{}) }
	rec := func(q, z float64, count int) accounting.Step {
		return accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, Neighbouring: accounting.AddRemove,
			SampleRate: q, NoiseMultiplier: z, Sensitivity: 2, NoiseStd: 2 * z, Count: count}
	}
	unit := []accounting.Step{rec(0.01, 1, 300), rec(0.02, 0.5, 100), rec(0.01, 2, 50)}
	eps := func(sigma float64) float64 {
		a, _ := rdp.New(accounting.Run{})
		for _, s := range unit {
			s.NoiseMultiplier *= sigma
			s.NoiseStd *= sigma
			if err := a.Compose(s); err != nil {
				t.Fatal(err)
			}
		}
		g, _ := a.Epsilon(1e-5)
		return g.Epsilon
	}
	sigma, g, err := accounting.CalibrateRecords(context.Background(), newRDP, unit, 1.5, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if e := eps(sigma); e > 1.5 || e != g.Epsilon {
		t.Errorf("σ = %v gives ε = %v (reported %v), want ≤ 1.5", sigma, e, g.Epsilon)
	}
	if e := eps(sigma * (1 - 2*accounting.CalibrateTolerance)); e <= 1.5 {
		t.Errorf("σ = %v is not minimal: a smaller σ gives ε = %v", sigma, e)
	}
	if _, _, err := accounting.CalibrateRecords(context.Background(), newRDP, nil, 1, 1e-5); err == nil {
		t.Error("calibrating no records was accepted")
	}
}

// CalibrateRecords stops once its context is done, also while composing a long list of
// records, and says why.
func TestCalibrateRecordsStopsWithContext(t *testing.T) {
	newRDP := func() (accounting.Accountant, error) { return rdp.New(accounting.Run{}) }
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	unit := []accounting.Step{{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, Neighbouring: accounting.AddRemove,
		SampleRate: 0.01, NoiseMultiplier: 1, Count: 1000}}
	if _, _, err := accounting.CalibrateRecords(ctx, newRDP, unit, 1, 1e-5); !errors.Is(err, context.Canceled) {
		t.Errorf("calibration under a cancelled context returned %v, want context.Canceled", err)
	}
	if _, _, err := accounting.CalibrateStep(ctx, newRDP, unit[0], 1, 1e-5); !errors.Is(err, context.Canceled) {
		t.Errorf("CalibrateStep under a cancelled context returned %v, want context.Canceled", err)
	}
}
