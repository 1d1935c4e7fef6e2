package pld

import (
	"math"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/rdp"
)

func eps(t testing.TB, q, sigma float64, steps int, delta float64, s accounting.Sampling) float64 {
	t.Helper()
	a, _ := New(accounting.Run{})
	if err := a.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: s, NoiseMultiplier: sigma, SampleRate: q, Count: steps}); err != nil {
		t.Fatal(err)
	}
	g, err := a.Epsilon(delta)
	if err != nil {
		t.Fatal(err)
	}
	return g.Epsilon
}

// Full batch: T Gaussian steps are one Gaussian with μ = √T/σ, whose exact ε(δ) is the
// analytic Gaussian mechanism (Balle & Wang 2018), computed here by gdp.EpsilonOf. The PLD must
// be above it (pessimistic) and within its discretisation error.
func TestFullBatchMatchesAnalyticGaussian(t *testing.T) {
	for _, tc := range []struct {
		sigma float64
		T     int
	}{{1, 1}, {2, 10}, {5, 100}, {20, 1000}} {
		got := eps(t, 1, tc.sigma, tc.T, 1e-5, accounting.FullBatch)
		want := analyticGaussian(math.Sqrt(float64(tc.T))/tc.sigma, 1e-5)
		if got < want-1e-6 || got > want+2e-3 {
			t.Errorf("σ=%v T=%v: PLD ε = %.6f, exact %.6f", tc.sigma, tc.T, got, want)
		}
	}
}

// Subsampled: PLD must be tighter than RDP and above the first-order lower bound a single
// step's exact PLD gives.
func TestBelowRDP(t *testing.T) {
	for _, tc := range []struct {
		q, sigma float64
		T        int
	}{{256.0 / 60000, 1.1, 14062}, {0.01, 1, 1000}, {0.1, 2, 100}, {0.05, 0.8, 300}, {0.001, 5, 10000}} {
		p := eps(t, tc.q, tc.sigma, tc.T, 1e-5, accounting.Poisson)
		a, _ := rdp.New(accounting.Run{})
		a.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: tc.sigma, SampleRate: tc.q, Count: tc.T})
		r, _ := a.Epsilon(1e-5)
		t.Logf("q=%v σ=%v T=%v: PLD %.4f, RDP %.4f", tc.q, tc.sigma, tc.T, p, r.Epsilon)
		if !(p > 0 && p <= r.Epsilon) {
			t.Errorf("q=%v σ=%v T=%v: PLD %.4f not in (0, RDP %.4f]", tc.q, tc.sigma, tc.T, p, r.Epsilon)
		}
	}
}

func TestMonotone(t *testing.T) {
	base := eps(t, 0.02, 1, 200, 1e-5, accounting.Poisson)
	if !(eps(t, 0.02, 1, 400, 1e-5, accounting.Poisson) > base && eps(t, 0.04, 1, 200, 1e-5, accounting.Poisson) > base &&
		eps(t, 0.02, 1.5, 200, 1e-5, accounting.Poisson) < base) {
		t.Error("ε not monotone in steps, q and 1/σ")
	}
}

// Splitting a run into heterogeneous records composes like one record.
func TestHeterogeneousComposition(t *testing.T) {
	a, _ := New(accounting.Run{})
	s := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: 1, SampleRate: 0.02, Count: 100}
	a.Compose(s)
	s.NoiseMultiplier = 2
	a.Compose(s)
	s.NoiseMultiplier = 1
	a.Compose(s)
	g, _ := a.Epsilon(1e-5)
	hi := eps(t, 0.02, 1, 300, 1e-5, accounting.Poisson)
	lo := eps(t, 0.02, 1, 200, 1e-5, accounting.Poisson)
	if !(g.Epsilon > lo && g.Epsilon < hi) {
		t.Errorf("mixed run ε = %v, want between %v and %v", g.Epsilon, lo, hi)
	}
}

func BenchmarkQuery100kSteps(b *testing.B) {
	for range b.N {
		eps(b, 256.0/60000, 1.1, 100000, 1e-5, accounting.Poisson)
	}
}

// analyticGaussian is the exact ε(δ) of the Gaussian mechanism with μ = sensitivity/σ (Balle &
// Wang 2018, Theorem 8): the root of Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) = δ, by bisection.
func analyticGaussian(mu, delta float64) float64 {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	d := func(e float64) float64 { return phi(-e/mu+mu/2) - math.Exp(e)*phi(-e/mu-mu/2) }
	lo, hi := 0.0, 100.0
	for i := 0; i < 200; i++ {
		mid := (lo + hi) / 2
		if d(mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// A vanishing sample rate has a vanishing ε, not "no finite ε": the mixture's log-likelihood
// ratio log(1 − q + q·eᵘ) is computed as log1p(q·expm1(u)) wherever that is finite, so that
// it stays positive for u > 0 at any q instead of cancelling to 0 and below, which put mass
// off the grid.
func TestTinySampleRate(t *testing.T) {
	for _, q := range []float64{1e-20, 1e-50, 1e-100, 1e-300} {
		a, _ := New(accounting.Run{})
		if err := a.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: 1, SampleRate: q, Count: 10}); err != nil {
			t.Fatalf("q = %g: %v", q, err)
		}
		g, err := a.Epsilon(1e-5)
		if err != nil || !(g.Epsilon >= 0 && g.Epsilon < 0.01) {
			t.Errorf("q = %g, σ = 1, 10 steps: ε = %v, %v; want a finite ε near 0", q, g.Epsilon, err)
		}
	}
}
