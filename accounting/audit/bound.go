package audit

import (
	"errors"
	"fmt"
	"math"
)

// PValue is the probability, under the null hypothesis that the audited run is (ε, δ)-DP, of
// v or more correct guesses among r guesses about m canaries (Steinke, Nasr & Jagielski 2023,
// arXiv:2305.08846: the main theorem's randomised-response tail with the δ term of the (ε, δ)
// corollary, as the paper's appendix computes it; checked against the authors' published p-value
// function, not against a theorem number):
//
//	q = e^ε / (1 + e^ε)                             (the accuracy of ε-DP randomised response)
//	β = P[Binomial(r, q) ≥ v]
//	α = max_{1≤i≤v} P[v − i ≤ Binomial(r, q) < v] / i
//	p = min(1, β + 2·m·δ·α).
//
// It returns an error for arguments outside 0 ≤ v ≤ r ≤ m, ε ≥ 0, 0 ≤ δ ≤ 1.
func PValue(m, r, v int, eps, delta float64) (float64, error) {
	if err := checkCounts(m, r, v); err != nil {
		return 0, err
	}
	if !(eps >= 0) || math.IsInf(eps, 1) {
		return 0, fmt.Errorf("audit: ε = %v must be finite and non-negative", eps)
	}
	if !(delta >= 0 && delta <= 1) {
		return 0, fmt.Errorf("audit: δ = %v must lie in [0, 1]", delta)
	}
	b := newBinomial(r, eps)
	beta := b.upperTail(v)
	alpha, sum := 0.0, 0.0
	for i := 1; i <= v; i++ {
		sum += b.pmf(v - i) // = P[v − i ≤ Binomial(r, q) < v]
		if a := sum / float64(i); a > alpha {
			alpha = a
		}
	}
	return math.Min(1, beta+2*float64(m)*delta*alpha), nil
}

func checkCounts(m, r, v int) error {
	if !(0 <= v && v <= r && r <= m) {
		return fmt.Errorf("audit: counts m = %d canaries, r = %d guesses, v = %d correct must satisfy 0 ≤ v ≤ r ≤ m", m, r, v)
	}
	return nil
}

// EpsilonLowerBound returns the largest ε that v correct guesses out of r (about m canaries)
// reject at the given confidence (0.95: p-value below 0.05), for the stated δ: the audit's
// lower bound on the run's ε. It is 0 when not even ε = 0 is rejected.
//
// The search is Appendix D's: widen the bracket, then bisect on ε, whose p-value is
// non-decreasing; it returns the rejected end
// of the final bracket, so the bound never overstates what the data show (rounding against the
// refutation). The bracket is narrowed to 1e-9 in ε.
func EpsilonLowerBound(m, r, v int, delta, confidence float64) (float64, error) {
	if !(confidence > 0 && confidence < 1) {
		return 0, fmt.Errorf("audit: confidence %v must lie in (0, 1), e.g. 0.95", confidence)
	}
	level := 1 - confidence
	rejected := func(eps float64) (bool, error) {
		p, err := PValue(m, r, v, eps, delta)
		return p < level, err
	}
	ok, err := rejected(0)
	if err != nil || !ok {
		return 0, err
	}
	lo, hi := 0.0, 1.0
	for {
		ok, err := rejected(hi)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		lo, hi = hi, 2*hi
		if hi > 1e4 {
			// v = r with δ = 0 rejects every ε only when r is unbounded; with finite r the
			// p-value q^r reaches any level below 1 long before this.
			return 0, errors.New("audit: the p-value stays below the level for every ε up to 1e4: the counts cannot come from a real audit")
		}
	}
	for hi-lo > 1e-9 {
		mid := (lo + hi) / 2
		ok, err := rejected(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// binomial holds log P[Binomial(r, q)] with q = e^ε/(1 + e^ε), computed in log space so that
// tails far below the smallest float64 do not underflow to a wrong zero before summation.
type binomial struct {
	r          int
	logQ, logP float64 // log q and log(1 − q)
	lgammaR1   float64
}

func newBinomial(r int, eps float64) binomial {
	// q = 1/(1 + e^{−ε}): log q = −log1p(e^{−ε}); log(1 − q) = −ε − log1p(e^{−ε}).
	l := math.Log1p(math.Exp(-eps))
	lg, _ := math.Lgamma(float64(r) + 1)
	return binomial{r: r, logQ: -l, logP: -eps - l, lgammaR1: lg}
}

// logPMF returns log P[Binomial(r, q) = k] for 0 ≤ k ≤ r.
func (b binomial) logPMF(k int) float64 {
	lk, _ := math.Lgamma(float64(k) + 1)
	lrk, _ := math.Lgamma(float64(b.r-k) + 1)
	lp := b.lgammaR1 - lk - lrk
	if k > 0 {
		lp += float64(k) * b.logQ
	}
	if k < b.r {
		lp += float64(b.r-k) * b.logP
	}
	return lp
}

func (b binomial) pmf(k int) float64 { return math.Exp(b.logPMF(k)) }

// upperTail returns P[Binomial(r, q) ≥ v] by log-sum-exp over k = v..r.
func (b binomial) upperTail(v int) float64 {
	if v <= 0 {
		return 1
	}
	if v > b.r {
		return 0
	}
	top := math.Inf(-1)
	for k := v; k <= b.r; k++ {
		top = math.Max(top, b.logPMF(k))
	}
	var s float64
	for k := v; k <= b.r; k++ {
		s += math.Exp(b.logPMF(k) - top)
	}
	return math.Min(1, math.Exp(top)*s)
}
