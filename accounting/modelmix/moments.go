package modelmix

import (
	"errors"
	"fmt"
	"math"
)

// Quadrature constants of the numerical calculation of Theorem 4.1 / Corollary 4.1.
const (
	// gridPerSigma is the number of grid points per noise standard deviation:
	// h = σ/20. The integrand is analytic and decays like a Gaussian, so the rectangle rule
	// converges spectrally; h = σ/10, σ/25 and σ/60 agree to about 1e-15.
	gridPerSigma = 20
	// tailSigmas is how many σ the grid extends beyond the last place the integrand has mass:
	// below −L/2 − 2s and above L/2 + (kmax+1)·s. The mass left out is below e^{−tailSigmas²/2}
	// (e^{−98}) relative to a_k (12σ would already do).
	tailSigmas = 14
	// windowNats: grid points whose term is more than windowNats below the largest are not
	// exponentiated; each is counted as exactly e^{−windowNats} of the largest instead, an upper
	// bound, so a_k can only be rounded up (by at most N·e^{−64} ≈ N·1.6e-28 relative).
	windowNats = 64
	// maxGridPoints bounds the work of one integral (about maxGridPoints·kmax multiply-adds).
	maxGridPoints = 8_000_000
	// marginRel and marginAbsPerOrder are added to every ln a_k, k ≥ 2, to cover the rounding
	// error of the densities and of the sums (about k ulps absolute, a few ulps relative):
	// the accountant rounds against privacy.
	marginRel         = 1e-9
	marginAbsPerOrder = 1e-15
)

// LogMoments returns ln a_k for k = 0, …, kmax, where
//
//	a_k = ∫ p1(o)^k · p0(o)^{1−k} do = E_{o~p0}[(p1(o)/p0(o))^k],
//	p0 = N(0, sigma²) * U[−width/2, width/2],   p1(o) = p0(o − shift),
//
// the moments of the likelihood ratio in Xiao, Wan & Devadas's Corollary 4.1
// (with the factor T restored and the sign of 1−α fixed).
// a_0 = a_1 = 1 exactly. For width 0 it is the Gaussian closed form ln a_k = k(k−1)·shift²/(2σ²);
// otherwise it is the log-domain rectangle rule on a grid of step σ/20, with every
// rounding made upward.
func LogMoments(kmax int, sigma, width, shift float64) ([]float64, error) {
	switch {
	case kmax < 0:
		return nil, fmt.Errorf("modelmix: largest moment order %d is negative", kmax)
	case !(sigma > 0) || math.IsInf(sigma, 0):
		return nil, fmt.Errorf("modelmix: noise standard deviation %v is not a positive finite number", sigma)
	case !(width >= 0) || math.IsInf(width, 0):
		return nil, fmt.Errorf("modelmix: mixing width %v is not a finite number ≥ 0", width)
	case !(shift >= 0) || math.IsInf(shift, 0):
		return nil, fmt.Errorf("modelmix: shift %v is not a finite number ≥ 0", shift)
	}
	out := make([]float64, kmax+1)
	// Work in units of σ: a_k is invariant to a common scale.
	width, shift = width/sigma, shift/sigma
	if width == 0 || shift == 0 {
		// Gaussian: a_k = exp(k(k−1)s²/2) (and a_k = 1 when the two distributions coincide).
		for k := 2; k <= kmax; k++ {
			out[k] = float64(k) * float64(k-1) * shift * shift / 2
		}
		return out, nil
	}
	if kmax < 2 {
		return out, nil
	}

	lo := -width/2 - 2*shift - tailSigmas
	hi := width/2 + float64(kmax+1)*shift + tailSigmas
	const h = 1.0 / gridPerSigma
	nf := math.Ceil((hi-lo)/h) + 1
	if nf > maxGridPoints {
		return nil, fmt.Errorf("modelmix: the integral for orders up to %d needs %.3g grid points (more than %d): mixing width/σ = %.3g and shift/σ = %.3g are too large for this order grid; lower the maximum order or raise the noise",
			kmax, nf, maxGridPoints, width, shift)
	}
	n := int(nf)

	// ℓ0(o_i) = ln p0(o_i) and d(o_i) = ln p1(o_i) − ln p0(o_i); the order-k integrand is
	// exp(ℓ0 + k·d).
	g := newGaussLegendre()
	l0 := make([]float64, n)
	d := make([]float64, n)
	for i := range n {
		o := lo + float64(i)*h
		a := g.logDensity(o, width)
		b := g.logDensity(o-shift, width)
		if math.IsInf(a, 0) || math.IsNaN(a) || math.IsInf(b, 0) || math.IsNaN(b) {
			return nil, errors.New("modelmix: the log-density underflowed on the integration grid; this is a bug, please report the parameters")
		}
		l0[i], d[i] = a, b-a
	}

	logH := math.Log(h)
	for k := 2; k <= kmax; k++ {
		kf := float64(k)
		top := math.Inf(-1)
		for i, l := range l0 {
			if t := l + kf*d[i]; t > top {
				top = t
			}
		}
		// Neumaier-compensated sum of exp(t − top) over the window; the rest counted at
		// their upper bound e^{−windowNats} each.
		var sum, comp float64
		skipped := 0
		for i, l := range l0 {
			t := l + kf*d[i] - top
			if t < -windowNats {
				skipped++
				continue
			}
			x := math.Exp(t)
			s := sum + x
			if math.Abs(sum) >= x {
				comp += (sum - s) + x
			} else {
				comp += (x - s) + sum
			}
			sum = s
		}
		sum += comp + float64(skipped)*math.Exp(-windowNats)
		la := top + math.Log(sum) + logH
		// a_k ≥ (E[p1/p0])^k = 1 by Jensen: never report less.
		la = math.Max(la, 0)
		out[k] = la + marginRel*la + marginAbsPerOrder*kf
	}
	return out, nil
}
