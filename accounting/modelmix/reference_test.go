package modelmix

import (
	"math"
	"math/big"
)

// This file holds slow reference implementations used only by the tests. They share no code
// with the package: densities in linear (not log) space from math.Erfc, composite Simpson
// quadrature instead of the log-domain rectangle rule, and exact big-number binomial sums.

// refDensity is p0(o) = (1/L)·[Φ((o+L/2)/σ) − Φ((o−L/2)/σ)] for L > 0 and the Gaussian density
// for L = 0, evaluated by differences of upper tails on the side where they are small.
func refDensity(o, sigma, width float64) float64 {
	if width == 0 {
		return math.Exp(-o*o/(2*sigma*sigma)) / (sigma * math.Sqrt(2*math.Pi))
	}
	a, b := (o-width/2)/sigma, (o+width/2)/sigma
	if o < 0 {
		a, b = -b, -a
	}
	return 0.5 * (math.Erfc(a/math.Sqrt2) - math.Erfc(b/math.Sqrt2)) / width
}

// simpson integrates f over [lo, hi] with the composite Simpson rule on n (even) panels.
func simpson(f func(float64) float64, lo, hi float64, n int) float64 {
	if n%2 == 1 {
		n++
	}
	h := (hi - lo) / float64(n)
	s := f(lo) + f(hi)
	for i := 1; i < n; i++ {
		w := 2.0
		if i%2 == 1 {
			w = 4
		}
		s += w * f(lo+float64(i)*h)
	}
	return s * h / 3
}

// refMoment is a_k = ∫ p0·(p1/p0)^k by Simpson's rule over the whole support of the integrand.
func refMoment(k int, sigma, width, shift float64) float64 {
	lo := -width/2 - 12*sigma
	hi := width/2 + float64(k)*shift + 12*sigma
	f := func(o float64) float64 {
		p0 := refDensity(o, sigma, width)
		return math.Exp(math.Log(p0) + float64(k)*math.Log(refDensity(o-shift, sigma, width)/p0))
	}
	return simpson(f, lo, hi, int((hi-lo)/sigma*400))
}

// refDirectRDP is Theorem 4.1's D_α((1−q)P0 + qP1 ‖ P0) ("add") when add is true, or
// D_α(P0 ‖ (1−q)P0 + qP1) ("remove") otherwise, by direct integration of
// ∫ p0·((1−q) + q·p1/p0)^{±…} for p = 1 — no binomial expansion (seed-003 §4.5, §4.7 (a)–(b)).
func refDirectRDP(alpha, q, z, w float64, add bool) float64 {
	sigma, width, shift := z, w, 1.0
	lo := -width/2 - 12*sigma - 2
	hi := width/2 + alpha*shift + 12*sigma
	f := func(o float64) float64 {
		p0 := refDensity(o, sigma, width)
		mix := (1 - q) + q*refDensity(o-shift, sigma, width)/p0
		if add {
			return math.Exp(math.Log(p0) + alpha*math.Log(mix))
		}
		return math.Exp(math.Log(p0) + (1-alpha)*math.Log(mix))
	}
	return math.Log(simpson(f, lo, hi, int((hi-lo)/sigma*400))) / (alpha - 1)
}

// refSGM is the RDP of the Poisson-subsampled Gaussian mechanism at integer order α,
//
//	(1/(α−1))·ln Σ_{k=0}^{α} C(α,k)·(1−q)^{α−k}·q^k·exp(k(k−1)/(2z²)),
//
// Mironov, Talwar & Zhang (2019), Theorem 5 / Corollary 7, summed exactly in 256-bit floats
// with exact binomial coefficients; each exp is exact to float64 precision.
func refSGM(alpha int, q, z float64) float64 {
	const prec = 256
	sum := new(big.Float).SetPrec(prec)
	bq := new(big.Float).SetPrec(prec).SetFloat64(q)
	b1q := new(big.Float).SetPrec(prec).Sub(big.NewFloat(1).SetPrec(prec), bq)
	for k := 0; k <= alpha; k++ {
		term := new(big.Float).SetPrec(prec).SetInt(new(big.Int).Binomial(int64(alpha), int64(k)))
		for range alpha - k {
			term.Mul(term, b1q)
		}
		for range k {
			term.Mul(term, bq)
		}
		// exp(x) = 2^n·2^f with n integer, so that huge exponents do not overflow.
		x := float64(k*(k-1)) / (2 * z * z) / math.Ln2
		n := math.Floor(x)
		e := new(big.Float).SetPrec(prec).SetMantExp(big.NewFloat(math.Exp2(x-n)), int(n))
		term.Mul(term, e)
		sum.Add(sum, term)
	}
	// ln(m·2^e) with m ∈ [0.5, 1); the sum minus 1 is formed exactly first so that small
	// RDP values keep their digits.
	excess := new(big.Float).SetPrec(prec).Sub(sum, big.NewFloat(1).SetPrec(prec))
	ex, _ := excess.Float64()
	if ex < 1 {
		return math.Log1p(ex) / float64(alpha-1)
	}
	m := new(big.Float)
	exp := sum.MantExp(m)
	mf, _ := m.Float64()
	return (math.Log(mf) + float64(exp)*math.Ln2) / float64(alpha-1)
}
