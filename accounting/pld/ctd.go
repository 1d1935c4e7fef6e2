package pld

import (
	"math"

	"gonum.org/v1/gonum/integrate/quad"
)

// pmf is a discrete privacy loss distribution on the grid k·h: p[i] is the P-mass at loss
// (offset+i)·h and inf the mass at +∞.
type pmf struct {
	h      float64
	offset int
	p      []float64
	inf    float64
	// mgfPlus[i] and mgfMinus[i] are log Σ p e^{±λℓ} at λ = chernoffLambdas[i], rounded up
	// (chernoffMGF): computed once, so that a query does not walk the whole grid 92 times.
	mgfPlus, mgfMinus []float64
}

// direction selects which order of the dominating pair a PLD describes.
type direction int

const (
	// remove: P = (1−q)N(0,σ²) + qN(1,σ²), Q = N(0,σ²); the loss increases with x.
	remove direction = iota
	// add: P = N(0,σ²), Q = (1−q)N(0,σ²) + qN(1,σ²); the loss decreases with x.
	add
)

// tailZ is how many standard deviations the quadrature covers on each side: the mass beyond is
// at most Φ(−11) < 2e-28 per side, and is moved pessimistically.
const tailZ = 11

// glNodes is the Gauss–Legendre rule used on every piece of every bin.
const glNodes = 6

// mixture holds the sampled Gaussian's constants.
type mixture struct{ q, sigma float64 }

// u is the Gaussian log-likelihood ratio log(N(1,σ²)/N(0,σ²))(x) = (2x − 1)/(2σ²).
func (m mixture) u(x float64) float64 { return (2*x - 1) / (2 * m.sigma * m.sigma) }

// lmix is log(1 − q + q·e^u), stable for all u and q: log1p(q·expm1(u)) wherever q·expm1(u) is
// finite (for u > 0 the other form, u + log(q + (1−q)e^{−u}), cancels to 0 or below when
// q ≪ e^{−u}·2⁻⁵³), and that form where it is not (u above about 709).
func (m mixture) lmix(u float64) float64 {
	if m.q == 1 {
		return u
	}
	if t := m.q * math.Expm1(u); !math.IsInf(t, 1) {
		return math.Log1p(t)
	}
	return u + math.Log(m.q+(1-m.q)*math.Exp(-u))
}

// x returns the point where lmix(u(x)) = v, −Inf when v ≤ log(1−q) (never reached).
//
// It inverts lmix the same way: u = log1p(expm1(v)/q) wherever expm1(v)/q is finite, and
// v + log1p(−(1−q)e^{−v}) − log q where it is not.
func (m mixture) x(v float64) float64 {
	var u float64
	switch r := math.Expm1(v) / m.q; {
	case m.q == 1:
		u = v
	case !(r > -1):
		return math.Inf(-1)
	case math.IsInf(r, 1):
		u = v + math.Log1p(-(1-m.q)*math.Exp(-v)) - math.Log(m.q)
	default:
		u = math.Log1p(r)
	}
	return m.sigma*m.sigma*u + 0.5
}

// normPDF is the N(0, σ²) density at x.
func normPDF(x, sigma float64) float64 {
	z := x / sigma
	return math.Exp(-z*z/2) / (sigma * math.Sqrt(2*math.Pi))
}

// normCDF is Φ(x/σ).
func normCDF(x, sigma float64) float64 { return 0.5 * math.Erfc(-x/(sigma*math.Sqrt2)) }

// discretise returns the connect-the-dots PLD of one step of the Poisson-subsampled Gaussian
// (rate q, noise multiplier σ) in direction d on the grid of interval h (package doc).
func discretise(q, sigma float64, d direction, h float64) *pmf {
	m := mixture{q, sigma}
	xa, xb := -tailZ*sigma, 1+tailZ*sigma
	density := func(x float64) float64 {
		if d == remove {
			return (1-q)*normPDF(x, sigma) + q*normPDF(x-1, sigma)
		}
		return normPDF(x, sigma)
	}
	loss := func(x float64) float64 {
		if d == remove {
			return m.lmix(m.u(x))
		}
		return -m.lmix(m.u(x))
	}
	// xOf is the x where the loss equals e; ±Inf where no x reaches e (the boundary of
	// {loss ≤ e} is then at −∞ in both orders).
	xOf := func(e float64) float64 {
		if d == remove {
			return m.x(e)
		}
		return m.x(-e)
	}
	// Tail masses beyond [xa, xb], on the low- and high-loss sides.
	lowTail := (1-q)*normCDF(xa, sigma) + q*normCDF(xa-1, sigma)
	highTail := (1-q)*normCDF(-xb, sigma) + q*normCDF(1-xb, sigma)
	if d == add {
		lowTail, highTail = normCDF(-xb, sigma), normCDF(xa, sigma)
	}
	k0, k1 := gridRange(q, sigma, d, h)
	out := &pmf{h: h, offset: k0, p: make([]float64, k1-k0+1)}
	out.p[0] += lowTail // rounded up to the lowest grid point

	nodes, weights := make([]float64, glNodes), make([]float64, glNodes)
	quad.Legendre{}.FixedLocations(nodes, weights, -1, 1)
	maxPiece := sigma / 4
	for k := k0 + 1; k <= k1; k++ {
		a, b := float64(k-1)*h, float64(k)*h
		x1, x2 := xOf(a), xOf(b)
		if x1 > x2 {
			x1, x2 = x2, x1
		}
		x1, x2 = math.Max(x1, xa), math.Min(x2, xb)
		if !(x2 > x1) {
			continue
		}
		den := math.Expm1(a - b) // < 0
		pieces := int(math.Ceil((x2 - x1) / maxPiece))
		w := (x2 - x1) / float64(pieces)
		var up, low float64
		for j := 0; j < pieces; j++ {
			c := x1 + (float64(j)+0.5)*w
			for i, t := range nodes {
				x := c + t*w/2
				f := weights[i] * w / 2 * density(x)
				l := math.Min(math.Max(loss(x), a), b)
				// Connect-the-dots split of P-mass at loss l ∈ [a, b]: the share
				// (1 − e^{a−l})/(1 − e^{a−b}) goes to b, the rest, e^{a−l}(1 − e^{l−b})/(1 − e^{a−b}),
				// to a; both keep P- and Q-mass.
				rUp := math.Min(math.Max(math.Expm1(a-l)/den, 0), 1)
				rLow := math.Min(math.Max(math.Exp(a-l)*math.Expm1(l-b)/den, 0), 1)
				up += f * rUp
				low += f * rLow
			}
		}
		out.p[k-k0] += up
		out.p[k-1-k0] += low
	}
	var total float64
	for _, v := range out.p {
		total += v
	}
	out.inf = highTail
	if miss := 1 - total - highTail; miss > 0 {
		out.inf += miss // mass the quadrature missed is put where it costs most
	}
	out.chernoffMGF()
	return out
}

// lossRange is the range of privacy losses one step's discretisation covers in direction d:
// the losses at x ∈ [−11σ, 1 + 11σ] (tailZ), in increasing order.
func lossRange(q, sigma float64, d direction) (lo, hi float64) {
	m := mixture{q, sigma}
	xa, xb := -tailZ*sigma, 1+tailZ*sigma
	if d == remove {
		return m.lmix(m.u(xa)), m.lmix(m.u(xb))
	}
	return -m.lmix(m.u(xb)), -m.lmix(m.u(xa))
}

// gridRange is the first and last grid index of one step's discretisation on the grid of
// interval h; the step needs k1 − k0 + 1 grid points.
func gridRange(q, sigma float64, d direction, h float64) (k0, k1 int) {
	lo, hi := lossRange(q, sigma, d)
	k0, k1 = int(math.Floor(lo/h)), int(math.Ceil(hi/h))
	if k1 <= k0 {
		k1 = k0 + 1
	}
	return k0, k1
}

// gridPoints is how many grid points of interval h one step's discretisation needs, as a
// float so that it cannot overflow for any σ > 0 (σ = 0.001 at h = 1e-4 needs 5·10⁹).
func gridPoints(q, sigma float64, d direction, h float64) float64 {
	lo, hi := lossRange(q, sigma, d)
	return math.Max(math.Ceil(hi/h)-math.Floor(lo/h), 1) + 1
}
