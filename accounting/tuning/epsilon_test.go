package tuning

import (
	"math"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/rdp"
)

func TestCostMatchesTheRDPAccountant(t *testing.T) {
	// The single candidate's ε is what the rdp accountant reports for the same run.
	const q, sigma, steps, delta = 0.02, 1.1, 300, 1e-5
	acc, err := rdp.New(accounting.Run{})
	if err != nil {
		t.Fatal(err)
	}
	step := accounting.Step{Mechanism: accounting.Gaussian, NoiseMultiplier: sigma, Sensitivity: 1, NoiseStd: sigma,
		Sampling: accounting.Poisson, SampleRate: q, Neighbouring: accounting.AddRemove, Count: steps}
	if err := acc.Compose(step); err != nil {
		t.Fatal(err)
	}
	want, err := acc.Epsilon(delta)
	if err != nil {
		t.Fatal(err)
	}
	orders, curve := acc.Curve()
	o, err := costFromOrders(orders, curve, Geometric(0.1))
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(o.Single.Epsilon/want.Epsilon-1) > 1e-11 {
		t.Errorf("single candidate ε = %v, the rdp accountant's %v", o.Single.Epsilon, want.Epsilon)
	}
	if o.Search.Label != accounting.Certified || o.Search.Accountant != Name || math.Abs(o.Mean-10) > 1e-12 {
		t.Errorf("search guarantee %+v, mean %v", o.Search, o.Mean)
	}
	if o.Extra != o.Search.Epsilon-o.Single.Epsilon || o.Extra <= 0 {
		t.Errorf("extra %v", o.Extra)
	}
	if s := o.String(); !strings.Contains(s, "E[K] = 10 candidates") {
		t.Errorf("String() = %q", s)
	}
}

func TestCalibrateSampledGaussian(t *testing.T) {
	const q, steps, delta = 0.01, 500, 1e-5
	orders := rdp.DefaultOrders()
	for _, tc := range []struct {
		dist   Distribution
		target float64
	}{
		{Geometric(0.1), 4},
		{Poisson(10), 2},
		{Logarithmic(0.02691825958900153), 8},
	} {
		sigma, g, err := CalibrateSampledGaussian(tc.dist, q, steps, tc.target, delta, nil)
		if err != nil {
			t.Fatal(err)
		}
		if g.Epsilon > tc.target || g.Delta != delta || g.Accountant != Name {
			t.Errorf("%v: σ = %v gives %+v over the target %v", tc.dist, sigma, g, tc.target)
		}
		// A σ below the calibrated one by more than the tolerance misses the target.
		curve, err := SampledGaussianCurve(q, sigma*(1-2*accounting.CalibrateTolerance), steps, orders)
		if err != nil {
			t.Fatal(err)
		}
		o, err := costFromOrders(orders, curve, tc.dist)
		if err != nil {
			t.Fatal(err)
		}
		if o.Search.Epsilon <= tc.target {
			t.Errorf("%v: σ = %v is not the smallest: %v also meets ε = %v (%v)", tc.dist, sigma, sigma*(1-2*accounting.CalibrateTolerance), tc.target, o.Search.Epsilon)
		}
	}
}

func TestCalibrateRefusals(t *testing.T) {
	tests := []struct {
		name          string
		dist          Distribution
		q             float64
		steps         int
		target, delta float64
		want          string
	}{
		{"γ", Geometric(0), 0.01, 100, 2, 1e-5, "γ = 0"},
		{"μ", Poisson(-1), 0.01, 100, 2, 1e-5, "μ = -1"},
		{"q", Poisson(5), 0, 100, 2, 1e-5, "q = 0"},
		{"steps", Poisson(5), 0.01, 0, 2, 1e-5, "0 steps"},
		{"δ", Poisson(5), 0.01, 100, 2, 1, "δ = 1"},
		{"target", Poisson(5), 0.01, 100, -1, 1e-5, "target ε -1"},
		// Even a huge σ leaves log(E[K])/(λ−1) and the λ̂ terms: ε cannot get near 0.
		{"unreachable", Geometric(1e-6), 0.01, 100, 0.01, 1e-5, "unreachable"},
	}
	for _, tc := range tests {
		_, _, err := CalibrateSampledGaussian(tc.dist, tc.q, tc.steps, tc.target, tc.delta, []float64{2, 4, 8, 16, 32})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
	}
}
