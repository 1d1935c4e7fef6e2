package modelmix

import (
	"math"

	"gonum.org/v1/gonum/integrate/quad"
)

// This file evaluates the log-density of ModelMix's per-coordinate output distribution,
//
//	p0 = N(0, 1) * U[−L/2, L/2],   p0(o) = (1/L)·[Φ(o + L/2) − Φ(o − L/2)],
//
// in units of the noise standard deviation σ (Xiao, Wan & Devadas, Appendix D, which writes
// the same with Φ the upper tail). Every quantity the accountant integrates
// is a ratio of such densities, so it is invariant to the common scale and σ = 1 loses nothing.
//
// The densities are needed hundreds of σ into the tails (the order-k integrand sits about k·s
// beyond the edge of the uniform), so everything is computed in logs.

// asymptoticFrom is where logQ switches from erfc to the asymptotic series: erfc(x/√2) is
// accurate well past it, and the series with seven terms has relative error below 1e-14 there.
const asymptoticFrom = 20

// logQ returns ln Q(x), Q(x) = P(N(0,1) > x), accurate for every finite x.
func logQ(x float64) float64 {
	if x < asymptoticFrom {
		return math.Log(0.5 * math.Erfc(x/math.Sqrt2))
	}
	// Q(x) = φ(x)/x · (1 − 1/x² + 3/x⁴ − 15/x⁶ + …), Abramowitz & Stegun 26.2.12.
	sum, term := 1.0, 1.0
	for k := 1; k < 8; k++ {
		term *= -float64(2*k-1) / (x * x)
		sum += term
	}
	return -0.5*x*x - math.Log(x*math.Sqrt(2*math.Pi)) + math.Log(sum)
}

// narrowMass is the relative spread (ln φ(a) − ln φ(b) for a ≥ 0, or b − a across 0) below which
// logMass integrates φ directly by Gauss–Legendre quadrature instead of subtracting tails: a
// difference of two nearly equal tail probabilities loses all its digits when the interval is
// narrow (a mixing width far below σ).
const narrowMass = 1.0

// legendreNodes is the number of Gauss–Legendre nodes for narrow intervals. On the intervals
// where it is used the integrand e^{−a·u − u²/2} varies by at most a factor e², so 20 nodes
// integrate it to rounding error.
const legendreNodes = 20

// gaussLegendre is a Gauss–Legendre rule on [0, 1].
type gaussLegendre struct {
	x, w []float64
}

func newGaussLegendre() gaussLegendre {
	g := gaussLegendre{x: make([]float64, legendreNodes), w: make([]float64, legendreNodes)}
	quad.Legendre{}.FixedLocations(g.x, g.w, 0, 1)
	return g
}

// logMass returns ln(Φ(b) − Φ(a)) = ln ∫_a^b φ(t) dt for a < b, without cancellation for wide
// or narrow intervals, near 0 or far in either tail (differences of upper or lower tails, with a
// quadrature branch for narrow intervals).
func (g gaussLegendre) logMass(a, b float64) float64 {
	if b <= 0 {
		// Φ(b) − Φ(a) = Q(−b) − Q(−a): reflect into the right half-line.
		a, b = -b, -a
	}
	w := b - a
	if a >= 0 {
		// ∫_a^b φ = φ(a)·∫_0^w exp(−a·u − u²/2) du.
		if spread := w * (a + w/2); spread <= narrowMass {
			var s float64
			for i, x := range g.x {
				u := w * x
				s += g.w[i] * math.Exp(-u*(a+u/2))
			}
			return -0.5*a*a - 0.5*math.Log(2*math.Pi) + math.Log(w*s)
		}
		la, lb := logQ(a), logQ(b)
		return la + math.Log1p(-math.Exp(lb-la))
	}
	// a < 0 < b.
	if w <= 2*narrowMass {
		var s float64
		for i, x := range g.x {
			t := a + w*x
			s += g.w[i] * math.Exp(-0.5*t*t)
		}
		return math.Log(w*s) - 0.5*math.Log(2*math.Pi)
	}
	// The mass is at least Φ(2) − Φ(0) ≈ 0.48 here, so 1 − (two tails) keeps its digits.
	return math.Log1p(-(math.Exp(logQ(-a)) + math.Exp(logQ(b))))
}

// logDensity returns ln p0(x) for p0 = N(0,1) * U[−width/2, width/2], width > 0.
func (g gaussLegendre) logDensity(x, width float64) float64 {
	return g.logMass(x-width/2, x+width/2) - math.Log(width)
}
