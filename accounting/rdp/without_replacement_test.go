package rdp

import (
	"math"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// theorem9 evaluates Wang, Balle & Kasiviswanathan (2019), Theorem 9, for the Gaussian in
// plain floating point (no log space), for small orders where nothing overflows.
func theorem9(q, sigma float64, alpha int) float64 {
	eps := func(j float64) float64 { return j / (2 * sigma * sigma) }
	binom := func(n, k int) float64 {
		r := 1.0
		for i := 1; i <= k; i++ {
			r = r * float64(n-k+i) / float64(i)
		}
		return r
	}
	sum := 1 + q*q*binom(alpha, 2)*math.Min(4*(math.Exp(eps(2))-1), 2*math.Exp(eps(2)))
	for j := 3; j <= alpha; j++ {
		sum += 2 * math.Pow(q, float64(j)) * binom(alpha, j) * math.Exp(float64(j-1)*eps(float64(j)))
	}
	return math.Log(sum) / float64(alpha-1)
}

func TestWithoutReplacementTheorem9(t *testing.T) {
	for _, tc := range []struct {
		q, sigma float64
		alpha    int
	}{{0.01, 1, 2}, {0.01, 1, 5}, {0.1, 2, 8}, {0.05, 0.7, 12}, {0.3, 3, 20}} {
		got, err := SampledWithoutReplacementGaussian(tc.q, tc.sigma, float64(tc.alpha))
		if err != nil {
			t.Fatal(err)
		}
		if want := theorem9(tc.q, tc.sigma, tc.alpha); math.Abs(got-want) > 1e-12*math.Max(want, 1e-300)+1e-15 {
			t.Errorf("q=%v σ=%v α=%v: %v, direct %v", tc.q, tc.sigma, tc.alpha, got, want)
		}
	}
	// Fractional orders interpolate (α−1)ε(α) linearly between the integers (Corollary 10).
	lo, _ := SampledWithoutReplacementGaussian(0.05, 1.5, 4)
	hi, _ := SampledWithoutReplacementGaussian(0.05, 1.5, 5)
	mid, _ := SampledWithoutReplacementGaussian(0.05, 1.5, 4.25)
	if want := (0.75*3*lo + 0.25*4*hi) / 3.25; math.Abs(mid-want) > 1e-14 {
		t.Errorf("α = 4.25: %v, interpolation %v", mid, want)
	}
	// Below 2 the interpolation is with (α−1)ε = 0 at α = 1: ε(1.5) = ε(2)·(0.5·1)/0.5 = ε(2).
	two, _ := SampledWithoutReplacementGaussian(0.05, 1.5, 2)
	if e, _ := SampledWithoutReplacementGaussian(0.05, 1.5, 1.5); math.Abs(e-two) > 1e-15 {
		t.Errorf("α = 1.5: %v, want ε(2) = %v", e, two)
	}
}

// A fixed-size batch under replace-one (sensitivity 2C, so σ/2 over it) costs more than a
// Poisson batch at the same rate under add/remove, and the accountant refuses add/remove.
func TestWithoutReplacementAccountant(t *testing.T) {
	eps := func(s accounting.Step) float64 {
		a, _ := New(accounting.Run{})
		if err := a.Compose(s); err != nil {
			t.Fatal(err)
		}
		g, err := a.Epsilon(1e-5)
		if err != nil {
			t.Fatal(err)
		}
		return g.Epsilon
	}
	wor := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.WithoutReplacement, Neighbouring: accounting.ReplaceOne,
		NoiseMultiplier: 2, SampleRate: 0.01, BatchSize: 10, DatasetSize: 1000, Count: 1000}
	poisson := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, Neighbouring: accounting.AddRemove,
		NoiseMultiplier: 2, SampleRate: 0.01, Count: 1000}
	if w, p := eps(wor), eps(poisson); !(w > p) {
		t.Errorf("without replacement ε %v not above Poisson ε %v", w, p)
	}
	a, _ := New(accounting.Run{})
	wor.Neighbouring = accounting.AddRemove
	if err := a.Compose(wor); err == nil {
		t.Error("add/remove accepted for sampling without replacement")
	}
}

// A noise multiplier so small that ε(j) = j/(2σ²) overflows makes the bound +Inf (the order is
// unusable), never NaN: log-space sums of two infinite terms must stay infinite.
func TestWithoutReplacementTinyNoise(t *testing.T) {
	for _, tc := range []struct{ q, sigma, alpha float64 }{
		{0.01, 1.1111111111111111e-301, 65}, {0.5, 1e-160, 3}, {0.01, 1e-200, 2.5},
	} {
		got, err := SampledWithoutReplacementGaussian(tc.q, tc.sigma, tc.alpha)
		if err != nil || !math.IsInf(got, 1) {
			t.Errorf("q=%v σ=%v α=%v: %v, %v; want +Inf", tc.q, tc.sigma, tc.alpha, got, err)
		}
	}
}
