package rdp

import (
	"math"
)

// SampledWithoutReplacementGaussian returns an upper bound on the RDP at order alpha > 1 of
// one step that draws a uniformly random subset of a fixed size m = q·n of the n examples and
// applies the Gaussian mechanism with noise multiplier sigma (noise std over the l2
// sensitivity of the sum under the replace-one relation), for replace-one neighbours.
//
// It is the general bound of Wang, Balle & Kasiviswanathan (2019), "Subsampled Rényi
// Differential Privacy and Analytical Moments Accountant", Theorem 9, for a base mechanism
// with RDP ε(j) = j/(2σ²) and ε(∞) = ∞: at integer α ≥ 2
//
//	(α−1)·ε'(α) ≤ log(1 + q²C(α,2)·min{4(e^{ε(2)}−1), 2e^{ε(2)}} + Σ_{j=3}^{α} 2q^j C(α,j) e^{(j−1)ε(j)}),
//
// and at fractional α the linear interpolation of (α−1)ε'(α) between ⌊α⌋ and ⌈α⌉ (their
// Corollary 10; the cumulant generating function is convex, and (α−1)ε'(α) = 0 at α = 1).
// dp_accounting implements a refinement (their Theorem 27 with forward differences) that is
// tighter for large σ; this bound is never smaller than the true RDP.
func SampledWithoutReplacementGaussian(q, sigma, alpha float64) (float64, error) {
	if r, done, err := trivialCases(q, sigma, alpha); done {
		return r, err
	}
	if math.IsInf(alpha, 1) || alpha >= 1<<20 {
		return math.Inf(1), nil
	}
	lo, hi := math.Floor(alpha), math.Ceil(alpha)
	if lo == hi {
		return worCGF(q, sigma, int(lo)) / (alpha - 1), nil
	}
	t := alpha - lo
	klo := 0.0
	if lo >= 2 {
		klo = worCGF(q, sigma, int(lo))
	}
	return ((1-t)*klo + t*worCGF(q, sigma, int(hi))) / (alpha - 1), nil
}

// worCGF is the bound of Theorem 9 on (α−1)ε'(α) at integer α ≥ 2, summed in log space.
func worCGF(q, sigma float64, alpha int) float64 {
	eps := func(j float64) float64 { return j / (2 * sigma * sigma) }
	logQ := math.Log(q)
	a := float64(alpha)
	e2 := eps(2)
	// min{4(e^{ε(2)}−1), 2e^{ε(2)}} in log space.
	log2 := math.Min(math.Log(4)+math.Log(math.Expm1(e2)), math.Ln2+e2)
	lc := math.Log(a) + math.Log(a-1) - math.Ln2 // log C(α, 2)
	logSum := logAdd(0, 2*logQ+lc+log2)
	for j := 3; j <= alpha; j++ {
		jf := float64(j)
		lc += math.Log(a-jf+1) - math.Log(jf)
		logSum = logAdd(logSum, math.Ln2+jf*logQ+lc+(jf-1)*eps(jf))
	}
	return logSum
}
