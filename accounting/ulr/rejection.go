package ulr

import (
	"fmt"
	"math"
)

// RejectionTerm returns x = q·p(N_B−1; N̄, q) / (1 − P(N_B−1; N̄, q)), the rejection cost of one
// Sampled-with-Rejection Gaussian step (seed-002, Eq. 9 first term; Eq. 38 gives the exact cost
// ln(1+x)), with p and P the Binomial(N̄, q) pmf and CDF. The bound is taken at the smallest
// dataset size N̄ and is valid for every larger one only when N_B ≤ q·N̄ (Eq. 39), which is
// checked.
func RejectionTerm(q float64, minBatch, nbar int) (float64, error) {
	if !(q > 0 && q <= 1) {
		return 0, fmt.Errorf("ulr: sample rate %v is outside (0, 1]", q)
	}
	if minBatch < 1 || nbar < 1 {
		return 0, fmt.Errorf("ulr: need N_B ≥ 1 and a dataset size ≥ 2, got N_B = %d, N̄ = %d", minBatch, nbar)
	}
	if float64(minBatch) > q*float64(nbar) {
		return 0, fmt.Errorf("ulr: min_batch_size N_B = %d exceeds q·N̄ = %.6g (expected batch on the smallest neighbouring dataset): Theorem 3.6 needs N_B ≤ q·N̄; lower optimizer.min_batch_size (about half the batch size keeps the rejection term negligible)", minBatch, q*float64(nbar))
	}
	if q == 1 {
		return 0, nil // every batch is the whole dataset: never rejected
	}
	logQ, log1mQ := math.Log(q), math.Log1p(-q)
	n := float64(nbar)
	logPMF := func(k int) float64 {
		kf := float64(k)
		lg1, _ := math.Lgamma(n + 1)
		lg2, _ := math.Lgamma(kf + 1)
		lg3, _ := math.Lgamma(n - kf + 1)
		return lg1 - lg2 - lg3 + kf*logQ + (n-kf)*log1mQ
	}
	// log P(N_B−1) by a log-space sum; with N_B ≤ qN̄ the CDF is at most about 1/2, so
	// 1 − P is well conditioned.
	logCDF := math.Inf(-1)
	for k := 0; k < minBatch; k++ {
		logCDF = logAdd(logCDF, logPMF(k))
	}
	logTail := math.Log(-math.Expm1(logCDF))
	x := math.Exp(logQ + logPMF(minBatch-1) - logTail)
	// Round against privacy: a few ulps of relative slack for the log-space arithmetic.
	return x * (1 + 1e-12), nil
}

// logAdd returns log(e^a + e^b).
func logAdd(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a < b {
		a, b = b, a
	}
	return a + math.Log1p(math.Exp(b-a))
}
