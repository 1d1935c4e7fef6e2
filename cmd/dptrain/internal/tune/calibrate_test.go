package tune

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting/tuning"
)

// The calibrated σ of every setting makes the whole search, with the pointwise largest curve,
// meet the target, and not by a wide margin.
func TestCalibrateMeetsTarget(t *testing.T) {
	two := []Setting{{BatchSize: 256, SampleRate: 256.0 / 54000, Steps: 633}, {BatchSize: 512, SampleRate: 512.0 / 54000, Steps: 106}}
	for _, tc := range []struct {
		name   string
		sets   []Setting
		dist   tuning.Distribution
		score  float64
		target float64
	}{
		{"poisson, two settings", two, tuning.Poisson(4), 54, 2},
		{"geometric, one setting", two[:1], tuning.Geometric(0.2), 54, 3},
		{"negative binomial, two settings", two, tuning.TruncatedNegativeBinomial(0.5, 0.1), 20, 1},
	} {
		cal, err := Calibrate(context.Background(), tc.sets, tc.score, tc.dist, tc.target, 1e-5)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		_, search, err := Guarantees(cal.Settings, tc.score, tc.dist, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		if search != cal.Search || !(search.Epsilon <= tc.target) || search.Epsilon < 0.97*tc.target {
			t.Errorf("%s: the search's ε = %v (calibration said %v) for the target %v", tc.name, search.Epsilon, cal.Search.Epsilon, tc.target)
		}
		if cal.Candidate.Epsilon >= search.Epsilon {
			t.Errorf("%s: one candidate's ε = %v is not below the search's %v", tc.name, cal.Candidate.Epsilon, search.Epsilon)
		}
		for _, s := range cal.Settings {
			if !(s.NoiseMultiplier > 0) {
				t.Errorf("%s: setting %+v has no σ", tc.name, s)
			}
		}
	}
}

// With a negligible score, one setting's σ is the one tuning.CalibrateSampledGaussian finds.
func TestCalibrateAgreesWithTuning(t *testing.T) {
	s := Setting{BatchSize: 256, SampleRate: 256.0 / 54000, Steps: 633}
	dist := tuning.Poisson(4)
	cal, err := Calibrate(context.Background(), []Setting{s}, 1e6, dist, 2, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := tuning.CalibrateSampledGaussian(dist, s.SampleRate, s.Steps, 2, 1e-5, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cal.Settings[0].NoiseMultiplier; math.Abs(got/want-1) > 2e-4 {
		t.Errorf("σ = %v, tuning.CalibrateSampledGaussian %v", got, want)
	}
}

// A score noise too small for the target is named as the cause.
func TestCalibrateScoreTooNoisy(t *testing.T) {
	s := Setting{BatchSize: 256, SampleRate: 256.0 / 54000, Steps: 633}
	_, err := Calibrate(context.Background(), []Setting{s}, 0.5, tuning.Poisson(4), 2, 1e-5)
	if err == nil || !strings.Contains(err.Error(), "raise validation.noise") {
		t.Errorf("σ_s = 0.5: %v, want an error naming validation.noise", err)
	}
}
