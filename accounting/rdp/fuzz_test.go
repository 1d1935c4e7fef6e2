package rdp

import (
	"math"
	"testing"
)

// The per-step RDP functions take any (q, σ, α): arguments outside q ∈ [0, 1], σ ∈ (0, ∞),
// α > 1 are an error; within them the RDP is never NaN or negative (+Inf marks an unusable
// order). The sampled Gaussian's value is a Rényi divergence D_α((1−q)N(0,σ²) + qN(1,σ²) ‖
// N(0,σ²)), so it does not decrease with q (E[(1 − q + q·L)^α] is convex in q and 1 at q = 0),
// with α (Rényi divergences grow with the order) or as σ shrinks (more noise is
// post-processing); Theorem 9's bound without replacement is a sum of terms that grow with q
// below 1 and shrink with σ. Those checks allow for round-off and for the fractional series'
// upward truncation allowance of 2e^{−30} in log A_α, which is divided by α − 1.

// fuzzSlack is how far a value may sit below one it cannot mathematically exceed: a relative
// 1e-9, and in log A_α the truncation allowance and the round-off of summing about α terms
// (log A_α ≈ 0, where the true RDP is below round-off, can come out a few ulps of α above
// it), divided by α − 1.
func fuzzSlack(r, alpha float64) float64 {
	return 1e-9*r + (1e-12+1e-14*alpha)/(alpha-1) + 1e-300
}

func FuzzSampledGaussian(f *testing.F) {
	for _, c := range [][3]float64{
		{256.0 / 60000, 1.1, 8}, {0.01, 1.1, 2.5}, {0.01, 1.1, 32}, {1, 1.1, 4}, {0.5, 0.3, 1.01},
		{0, 1, 2}, {1e-300, 1, 3}, {1 - 1e-16, 1e3, 1.5}, {0.01, 1e-300, 2}, {0.01, 1e300, 2},
		{0.01, 1, 1024}, {0.01, 1, 1 << 20}, {0.01, 1, 1e19}, {0.01, 1, math.Inf(1)},
		{-0.1, 1, 2}, {1.5, 1, 2}, {0.1, 0, 2}, {0.1, -1, 2}, {0.1, 1, 1}, {0.1, 1, 0.5},
		{math.NaN(), 1, 2}, {0.1, math.NaN(), 2}, {0.1, 1, math.NaN()}, {0.1, math.Inf(1), 2},
	} {
		f.Add(c[0], c[1], c[2])
	}
	f.Fuzz(func(t *testing.T, q, sigma, alpha float64) {
		valid := q >= 0 && q <= 1 && sigma > 0 && !math.IsInf(sigma, 1) && alpha > 1
		for _, fn := range []struct {
			name string
			rdp  func(q, sigma, alpha float64) (float64, error)
		}{{"SampledGaussian", SampledGaussian}, {"SampledWithoutReplacementGaussian", SampledWithoutReplacementGaussian}} {
			r, err := fn.rdp(q, sigma, alpha)
			if !valid {
				if err == nil {
					t.Fatalf("%s(%v, %v, %v) = %v: no error for arguments outside the domain", fn.name, q, sigma, alpha, r)
				}
				continue
			}
			if err != nil {
				continue // a numerical failure is reported, never a number
			}
			if math.IsNaN(r) || r < 0 {
				t.Fatalf("%s(%v, %v, %v) = %v with no error", fn.name, q, sigma, alpha, r)
			}
			if math.IsInf(r, 1) {
				continue
			}
			// Not above the value at twice the rate, nor at half the noise. For the sampled
			// Gaussian q2 may reach 1 (its series there is the Gaussian mechanism's value); q = 1
			// is not Theorem 9's bound, which can exceed it near q = 1, so that one stays below.
			q2 := math.Min(1, 2*q)
			if fn.name != "SampledGaussian" && q2 == 1 {
				q2 = q
			}
			if q2 > q {
				if r2, err := fn.rdp(q2, sigma, alpha); err == nil && r2 < r-fuzzSlack(r, alpha) {
					t.Fatalf("%s: q = %v gives %v, above %v at q = %v (σ = %v, α = %v)", fn.name, q, r, r2, q2, sigma, alpha)
				}
			}
			if s2 := sigma / 2; s2 > 0 {
				if r2, err := fn.rdp(q, s2, alpha); err == nil && r2 < r-fuzzSlack(r, alpha) {
					t.Fatalf("%s: σ = %v gives %v, above %v at σ = %v (q = %v, α = %v)", fn.name, sigma, r, r2, s2, q, alpha)
				}
			}
			if fn.name != "SampledGaussian" {
				continue
			}
			if q == 1 && r != alpha/(2*sigma*sigma) {
				t.Fatalf("q = 1: %v, want the Gaussian mechanism's α/(2σ²) = %v", r, alpha/(2*sigma*sigma))
			}
			// Not below the value at a lower order.
			if a2 := 1 + (alpha-1)/2; a2 > 1 && a2 < alpha {
				if r2, err := fn.rdp(q, sigma, a2); err == nil && r < r2-fuzzSlack(r2, a2) {
					t.Fatalf("%s: α = %v gives %v, below %v at α = %v (q = %v, σ = %v)", fn.name, alpha, r, r2, a2, q, sigma)
				}
			}
		}
	})
}
