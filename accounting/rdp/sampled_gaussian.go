package rdp

import (
	"fmt"
	"math"
)

// SampledGaussian returns the RDP at order alpha > 1 of one step of the sampled Gaussian
// mechanism: Poisson sampling with rate q, then the Gaussian mechanism with noise multiplier
// sigma (noise std over l2 sensitivity), under the add/remove relation.
//
// It is log(A_α)/(α−1) with A_α from Mironov, Talwar & Zhang (2019): the binomial expansion of
// Section 3.3 at integer orders, the two-sided series of Section 3.4 at fractional ones, both
// summed in log space. q = 1 gives the Gaussian mechanism's α/(2σ²) exactly.
func SampledGaussian(q, sigma, alpha float64) (float64, error) {
	switch {
	case !(q >= 0 && q <= 1):
		return 0, fmt.Errorf("rdp: sample rate %v outside [0, 1]", q)
	case !(sigma > 0) || math.IsInf(sigma, 1):
		return 0, fmt.Errorf("rdp: noise multiplier %v is not positive and finite", sigma)
	case !(alpha > 1):
		return 0, fmt.Errorf("rdp: order %v must exceed 1", alpha)
	}
	if q == 0 {
		return 0, nil
	}
	if q == 1 {
		return alpha / (2 * sigma * sigma), nil
	}
	if math.IsInf(alpha, 1) {
		return math.Inf(1), nil
	}
	var logA float64
	if alpha == math.Trunc(alpha) {
		logA = logAInt(q, sigma, int(alpha))
	} else {
		logA = logAFrac(q, sigma, alpha)
	}
	return math.Max(logA, 0) / (alpha - 1), nil
}

// logAInt is log A_α for integer α (Section 3.3):
//
//	A_α = Σ_{k=0}^{α} C(α,k) (1−q)^{α−k} q^k exp((k²−k)/(2σ²)).
func logAInt(q, sigma float64, alpha int) float64 {
	logQ, log1mQ := math.Log(q), math.Log1p(-q)
	s2 := 2 * sigma * sigma
	a := float64(alpha)
	logA := math.Inf(-1)
	for k := 0; k <= alpha; k++ {
		kf := float64(k)
		t := logBinom(a, kf) + kf*logQ + (a-kf)*log1mQ + (kf*kf-kf)/s2
		logA = logAdd(logA, t)
	}
	return logA
}

// logAFrac is log A_α for fractional α (Section 3.4): A_α = A₀ + A₁ with
//
//	A₀ = Σ_k C(α,k) q^k (1−q)^{α−k} exp((k²−k)/(2σ²)) · ½ erfc((k − z₀)/(√2σ)),
//	A₁ = Σ_k C(α,k) q^{α−k} (1−q)^k exp(((α−k)²−(α−k))/(2σ²)) · ½ erfc((z₀ − (α−k))/(√2σ)),
//
// with z₀ = σ² log(1/q − 1) + ½, summed until both terms fall below e^{−30} of the total's
// scale; C(α,k) changes sign for k > α, so positive and negative terms are kept apart.
func logAFrac(q, sigma, alpha float64) float64 {
	logQ, log1mQ := math.Log(q), math.Log1p(-q)
	s2 := 2 * sigma * sigma
	z0 := sigma*sigma*math.Log(1/q-1) + 0.5
	pos0, pos1 := math.Inf(-1), math.Inf(-1)
	neg0, neg1 := math.Inf(-1), math.Inf(-1)
	for k := 0; ; k++ {
		i := float64(k)
		j := alpha - i
		lc, sign := logAbsBinom(alpha, i)
		t0 := lc + i*logQ + j*log1mQ
		t1 := lc + j*logQ + i*log1mQ
		e0 := math.Log(0.5) + logErfc((i-z0)/(math.Sqrt2*sigma))
		e1 := math.Log(0.5) + logErfc((z0-j)/(math.Sqrt2*sigma))
		s0 := t0 + (i*i-i)/s2 + e0
		s1 := t1 + (j*j-j)/s2 + e1
		if sign > 0 {
			pos0, pos1 = logAdd(pos0, s0), logAdd(pos1, s1)
		} else {
			neg0, neg1 = logAdd(neg0, s0), logAdd(neg1, s1)
		}
		if k > int(alpha)+1 && math.Max(s0, s1) < -30 {
			break
		}
		if k > 100000 {
			break // the terms decay super-exponentially; this bound is never reached in practice
		}
	}
	return logAdd(logSub(pos0, neg0), logSub(pos1, neg1))
}

// logBinom is log C(n, k) for 0 ≤ k ≤ n.
func logBinom(n, k float64) float64 {
	a, _ := math.Lgamma(n + 1)
	b, _ := math.Lgamma(k + 1)
	c, _ := math.Lgamma(n - k + 1)
	return a - b - c
}

// logAbsBinom is log|C(α, k)| and its sign for real α and integer k ≥ 0, from
// C(α,k) = Γ(α+1)/(Γ(k+1)Γ(α−k+1)).
func logAbsBinom(alpha, k float64) (float64, int) {
	a, sa := math.Lgamma(alpha + 1)
	b, sb := math.Lgamma(k + 1)
	c, sc := math.Lgamma(alpha - k + 1)
	return a - b - c, sa * sb * sc
}

// logAdd is log(e^a + e^b).
func logAdd(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) {
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

// logErfc is log(erfc(x)), accurate where erfc underflows: for x > 25 it uses the asymptotic
// series erfc(x) ≈ e^{−x²}/(x√π) · (1 − 1/(2x²) + 3/(4x⁴) − 15/(8x⁶)), whose relative error
// there is below 1e-10.
func logErfc(x float64) float64 {
	if x < 25 {
		return math.Log(math.Erfc(x))
	}
	r := 1 / (x * x)
	return -x*x - math.Log(x) - 0.5*math.Log(math.Pi) + math.Log1p(-r/2+3*r*r/4-15*r*r*r/8)
}
