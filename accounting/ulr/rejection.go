package ulr

import (
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// RejectionTerm returns x = q·p(N_B−1; N̄, q) / (1 − P(N_B−1; N̄, q)), the rejection cost of one
// Sampled-with-Rejection Gaussian step (Feng et al., "Forward Learning with Differential Privacy", Eq. 9 first term; Eq. 38 gives the exact cost
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
		return 0, &accounting.RequirementError{Accountant: "ulr", Theorem: "Theorem 3.6",
			Reason: fmt.Sprintf("min_batch_size N_B = %d exceeds q·N̄ = %.6g (expected batch on the smallest neighbouring dataset): Theorem 3.6 needs N_B ≤ q·N̄", minBatch, q*float64(nbar)),
			Fix:    "lower %s (about half the batch size keeps the rejection term negligible)", Fields: []string{"Step.MinBatchSize"}}
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

// DefaultRejectionBound is the per-step rejection term that DefaultMinBatchSize stays under:
// it is added to every Rényi order of every step, so a million steps add at most 1e-4 to ε,
// well below the subsampled-Gaussian term of the paper's settings (2q²α/σ0² ≥ 3e-8 at B = 64 of
// 60 000, σ0 = 8; computed from Eq. 9's first term).
const DefaultRejectionBound = 1e-10

// DefaultMinBatchSize returns the largest rejection threshold N_B ≤ q·N̄ whose rejection term
// (RejectionTerm) is at most bound, and that term: the advice that N_B
// sit far enough below the expected batch q·N̄ that rejection costs nothing measurable. The term
// grows with N_B, so the search is a bisection. It is an error when even N_B = 1 exceeds bound
// (a tiny expected batch): then set optimizer.min_batch_size explicitly.
func DefaultMinBatchSize(q float64, nbar int, bound float64) (int, float64, error) {
	if !(bound > 0) {
		return 0, 0, fmt.Errorf("ulr: rejection bound %v must be positive", bound)
	}
	hi := int(math.Floor(q * float64(nbar)))
	if hi < 1 {
		return 0, 0, &accounting.RequirementError{Accountant: "ulr", Theorem: "Theorem 3.6",
			Reason: fmt.Sprintf("the expected batch q·N̄ = %.6g is below 1", q*float64(nbar)), Fix: "raise %s", Fields: []string{"Step.BatchSize"}}
	}
	r1, err := RejectionTerm(q, 1, nbar)
	if err != nil {
		return 0, 0, err
	}
	if r1 > bound {
		return 0, 0, &accounting.RequirementError{Accountant: "ulr", Theorem: "Theorem 3.6",
			Reason: fmt.Sprintf("even N_B = 1 has rejection term %.3g > %.3g at q = %.6g, N̄ = %d", r1, bound, q, nbar),
			Fix:    "set %s explicitly and check the ulr accountant's ε", Fields: []string{"Step.MinBatchSize"}}
	}
	lo, rlo := 1, r1 // invariant: RejectionTerm(lo) ≤ bound
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		r, err := RejectionTerm(q, mid, nbar)
		if err != nil {
			return 0, 0, err
		}
		if r <= bound {
			lo, rlo = mid, r
		} else {
			hi = mid - 1
		}
	}
	return lo, rlo, nil
}
