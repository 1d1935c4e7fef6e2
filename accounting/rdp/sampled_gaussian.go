package rdp

import (
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// maxFracTerms bounds the series of logAFrac. When it is reached before the terms are
// negligible the order is dropped (its RDP reported as +Inf), never truncated to a smaller
// value: RDPToEpsilon skips infinite orders.
const maxFracTerms = 5000

// SampledGaussian returns the RDP at order alpha > 1 of one step of the sampled Gaussian
// mechanism: Poisson sampling with rate q, then the Gaussian mechanism with noise multiplier
// sigma (noise std over l2 sensitivity), under the add/remove relation.
//
// It is log(A_α)/(α−1) with A_α from Mironov, Talwar & Zhang (2019), "Rényi Differential
// Privacy of the Sampled Gaussian Mechanism": the binomial expansion of Section 3.3 at integer
// orders, the two-sided series of Section 3.4 at fractional ones, both summed in log space.
// q = 1 gives the Gaussian mechanism's α/(2σ²) exactly. An order whose series does not
// converge within maxFracTerms terms gives +Inf (the order is unusable, not small).
func SampledGaussian(q, sigma, alpha float64) (float64, error) {
	if r, done, err := trivialCases(q, sigma, alpha); done {
		return r, err
	}
	if math.IsInf(alpha, 1) {
		return math.Inf(1), nil
	}
	var logA float64
	if alpha == math.Trunc(alpha) && alpha < 1<<20 {
		logA = logAInt(q, sigma, int(alpha))
	} else {
		logA = logAFrac(q, sigma, alpha)
	}
	if math.IsNaN(logA) {
		return 0, fmt.Errorf("rdp: numerical failure at order %v (q = %v, σ = %v)", alpha, q, sigma)
	}
	// A_α ≥ 1 mathematically (Rényi divergences are non-negative); clamp rounding below 0,
	// and round the result up (the fractional series is also truncated: see logAFrac).
	return accounting.RoundUp(math.Max(logA, 0) / (alpha - 1)), nil
}

// logAInt is log A_α for integer α (Mironov, Talwar & Zhang 2019, Section 3.3):
//
//	A_α = Σ_{k=0}^{α} C(α,k) (1−q)^{α−k} q^k exp((k²−k)/(2σ²)),
//
// every term positive, summed in log space with log C(α,k) by recurrence.
func logAInt(q, sigma float64, alpha int) float64 {
	logQ, log1mQ := math.Log(q), math.Log1p(-q)
	s2 := 2 * sigma * sigma
	a := float64(alpha)
	logA := math.Inf(-1)
	lc := 0.0 // log C(α, k)
	for k := 0; k <= alpha; k++ {
		kf := float64(k)
		if k > 0 {
			lc += math.Log(a-kf+1) - math.Log(kf)
		}
		logA = logAdd(logA, lc+kf*logQ+(a-kf)*log1mQ+(kf*kf-kf)/s2)
	}
	return logA
}

// logAFrac is log A_α for fractional α (Mironov, Talwar & Zhang 2019, Section 3.4):
// A_α = A₀ + A₁ with
//
//	A₀ = Σ_k C(α,k) q^k (1−q)^{α−k} exp((k²−k)/(2σ²)) · ½ erfc((k − z₀)/(√2σ)),
//	A₁ = Σ_k C(α,k) q^{α−k} (1−q)^k exp(((α−k)²−(α−k))/(2σ²)) · ½ erfc((z₀ − (α−k))/(√2σ)),
//
// z₀ = σ² log(1/q − 1) + ½. The generalised binomial C(α,k) changes sign for k > α, so
// positive and negative terms are summed apart. The series stops once both terms decrease and
// are below e^{−30} of the running total; if that takes more than maxFracTerms terms the
// result is +Inf.
func logAFrac(q, sigma, alpha float64) float64 {
	logQ, log1mQ := math.Log(q), math.Log1p(-q)
	s2 := 2 * sigma * sigma
	z0 := sigma*sigma*(math.Log1p(-q)-logQ) + 0.5
	sq := math.Sqrt2 * sigma
	pos, neg := math.Inf(-1), math.Inf(-1)
	last0, last1 := math.Inf(-1), math.Inf(-1)
	lc, sign := 0.0, 1 // log|C(α,k)| and its sign
	for k := 0; k < maxFracTerms; k++ {
		i := float64(k)
		if k > 0 {
			d := alpha - i + 1
			lc += math.Log(math.Abs(d)) - math.Log(i)
			if d < 0 {
				sign = -sign
			}
		}
		j := alpha - i
		s0 := lc + i*logQ + j*log1mQ + (i*i-i)/s2 + logHalfErfc((i-z0)/sq)
		s1 := lc + j*logQ + i*log1mQ + (j*j-j)/s2 + logHalfErfc((z0-j)/sq)
		if sign > 0 {
			pos = logAdd(pos, logAdd(s0, s1))
		} else {
			neg = logAdd(neg, logAdd(s0, s1))
		}
		total := logSub(pos, neg)
		if k > int(alpha)+1 && s0 < last0 && s1 < last1 && math.Max(s0, s1) < total-30 {
			// The omitted tail is allowed for as 2·e^{−30} of the total (decreasing terms
			// below e^{−30} of it; an allowance against truncation, rounded up again by the
			// caller, not a proven bound).
			return total + 2*math.Exp(-30)
		}
		last0, last1 = s0, s1
	}
	return math.Inf(1)
}

// logAdd is log(e^a + e^b); +Inf when either is +Inf (the general formula would give
// Inf − Inf = NaN for two).
func logAdd(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) || math.IsInf(a, 1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// logSub is log(e^a − e^b) for a ≥ b; it returns −Inf when the difference vanishes.
func logSub(a, b float64) float64 {
	if math.IsInf(b, -1) {
		return a
	}
	if b >= a {
		return math.Inf(-1)
	}
	return a + math.Log(-math.Expm1(b-a))
}

// logHalfErfc is log(½ erfc(x)), accurate where erfc underflows: for x > 25 it uses the
// asymptotic series erfc(x) ≈ e^{−x²}/(x√π) · (1 − 1/(2x²) + 3/(4x⁴) − 15/(8x⁶)), whose
// relative error there is below 1e-10.
func logHalfErfc(x float64) float64 {
	if x < 25 {
		return math.Log(0.5 * math.Erfc(x))
	}
	r := 1 / (x * x)
	return -math.Ln2 - x*x - math.Log(x) - 0.5*math.Log(math.Pi) + math.Log1p(-r/2+3*r*r/4-15*r*r*r/8)
}

// trivialCases checks the arguments shared by every per-step RDP function and answers the
// cases with a closed form: q = 0 releases nothing, q = 1 is the Gaussian mechanism, α/(2σ²).
func trivialCases(q, sigma, alpha float64) (rdp float64, done bool, err error) {
	switch {
	case !(q >= 0 && q <= 1):
		return 0, true, fmt.Errorf("rdp: sample rate %v outside [0, 1]", q)
	case !(sigma > 0) || math.IsInf(sigma, 1):
		return 0, true, fmt.Errorf("rdp: noise multiplier %v is not positive and finite", sigma)
	case !(alpha > 1):
		return 0, true, fmt.Errorf("rdp: order %v must exceed 1", alpha)
	case q == 0:
		return 0, true, nil
	case q == 1:
		return alpha / (2 * sigma * sigma), true, nil
	}
	return 0, false, nil
}
