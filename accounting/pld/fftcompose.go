package pld

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"

	"gonum.org/v1/gonum/dsp/fourier"
)

// maxFFTSize caps the composed window's length; a window that needs more points is
// recomputed on a coarser grid.
const maxFFTSize = 1 << 18

// chernoffLambdas are the exponents tried in the Chernoff bounds of the window.
var chernoffLambdas = func() []float64 {
	var l []float64
	for k := -12; k <= 10; k++ {
		l = append(l, math.Ldexp(1, k), 1.5*math.Ldexp(1, k))
	}
	return l
}()

// selfComposed is count identical steps with discrete PLD d.
type selfComposed struct {
	d     *pmf
	count int
}

// mgfMargin is added to every cached log-MGF: the recurrence in chernoffMGF is accurate to a
// few ulps per term, and a larger MGF only widens the Chernoff window (pessimistic).
const mgfMargin = 1e-12

// mgfResync is how many terms chernoffMGF advances by multiplication before recomputing a
// term exactly.
const mgfResync = 32

// chernoffMGF fills d.mgfPlus and d.mgfMinus with log Σ_i p_i e^{±λ ℓ_i} over the finite part
// of d for every λ in chernoffLambdas. Each term is e^{λℓ_i − m} ≤ 1 (m the largest exponent),
// advanced from the previous one by the factor e^{λh} and recomputed exactly every
// mgfResync terms, so the pass costs multiplications, not 92 exponentials per grid point.
func (d *pmf) chernoffMGF() {
	first, last := -1, -1
	for i, v := range d.p {
		if v > 0 {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	d.mgfPlus = make([]float64, len(chernoffLambdas))
	d.mgfMinus = make([]float64, len(chernoffLambdas))
	for k, lam := range chernoffLambdas {
		d.mgfPlus[k] = d.logMGF(lam, first, last)
		d.mgfMinus[k] = d.logMGF(-lam, first, last)
	}
}

// logMGF is log Σ_i p_i e^{λ ℓ_i} over the bins first..last of d, rounded up by mgfMargin.
func (d *pmf) logMGF(lambda float64, first, last int) float64 {
	if first < 0 {
		return math.Inf(-1)
	}
	loss := func(i int) float64 { return float64(d.offset+i) * d.h }
	m := math.Max(lambda*loss(first), lambda*loss(last)) // λℓ is monotone in i
	step := math.Exp(lambda * d.h)
	resync := mgfResync
	if math.Abs(lambda*d.h) > 1 {
		resync = 1 // consecutive terms differ by more than e: compute each one (no 0·∞)
	}
	var s, term float64
	for i := first; i <= last; i++ {
		if (i-first)%resync == 0 {
			term = math.Exp(lambda*loss(i) - m)
		} else {
			term *= step
		}
		s += d.p[i] * term
	}
	return m + math.Log(s) + mgfMargin
}

// composed is the composition of groups on a window of the grid: r[j] is the mass at loss
// (lo+j)·h; extra is the mass counted as if at +∞ (the infinite-loss mass, both Chernoff tails
// and the round-off allowance).
type composed struct {
	h     float64
	lo    int
	r     []float64
	extra float64
}

// compose returns the composition of groups (all on the same grid interval h) on a window
// whose tails beyond each end carry at most tau mass each (package doc).
func compose(groups []selfComposed, h, tau float64) (*composed, error) {
	// Infinite loss: 1 − Π (1 − inf_g)^{T_g}, in log space.
	var logFinite float64
	for _, g := range groups {
		logFinite += float64(g.count) * math.Log1p(-g.d.inf)
	}
	inf := -math.Expm1(logFinite)

	// Chernoff window: P(S ≥ u) ≤ exp(Σ T log M(λ) − λu), P(S ≤ l) ≤ exp(Σ T log M(−λ) + λl).
	upper, lower := math.Inf(1), math.Inf(-1)
	for k, lam := range chernoffLambdas {
		var kp, km float64
		for _, g := range groups {
			kp += float64(g.count) * g.d.mgfPlus[k]
			km += float64(g.count) * g.d.mgfMinus[k]
		}
		upper = math.Min(upper, (kp-math.Log(tau))/lam)
		lower = math.Max(lower, (math.Log(tau)-km)/lam)
	}
	if math.IsNaN(upper) || math.IsNaN(lower) || math.IsInf(upper, 0) || math.IsInf(lower, 0) {
		return nil, errors.New("pld: could not bound the composed privacy loss (numerical failure)")
	}
	lo, hi := int64(math.Floor(lower/h)), int64(math.Ceil(upper/h))
	width := hi - lo + 1
	if width > maxFFTSize {
		return nil, &tooWideError{width: float64(width)}
	}
	n := 2
	for int64(n) < width {
		n <<= 1
	}
	fft := fourier.NewFFT(n)
	buf := make([]float64, n)
	var prod []complex128
	var base int64 // grid index of the composed array's position 0, modulo n
	for _, g := range groups {
		for i := range buf {
			buf[i] = 0
		}
		for i, v := range g.d.p {
			buf[i%n] += v
		}
		c := fft.Coefficients(nil, buf)
		t := float64(g.count)
		for k, z := range c {
			// z^T in polar form: |z|^T e^{iTθ}.
			r, th := cmplx.Abs(z), cmplx.Phase(z)
			var zt complex128
			if r > 0 {
				s, co := math.Sincos(math.Mod(t*th, 2*math.Pi))
				m := math.Exp(t * math.Log(r))
				zt = complex(m*co, m*s)
			}
			if prod == nil {
				c[k] = zt
			} else {
				prod[k] *= zt
			}
		}
		if prod == nil {
			prod = c
		}
		base += int64(g.count) * int64(g.d.offset)
	}
	seq := fft.Sequence(buf, prod)
	out := &composed{h: h, lo: int(lo), r: make([]float64, n)}
	// Position j holds the mass of grid indices base + j (mod n); the window starts at lo.
	shift := int((((lo - base) % int64(n)) + int64(n)) % int64(n))
	var negative float64
	inv := 1 / float64(n)
	for m := range out.r {
		v := seq[(m+shift)%n] * inv
		if v < 0 {
			negative -= v
			v = 0
		}
		out.r[m] = v
	}
	out.extra = inf + 2*tau + 4*negative
	return out, nil
}

// tooWideError says that the composed window needs width grid points, more than
// maxFFTSize: the caller recomputes on a grid coarse enough to hold it.
type tooWideError struct{ width float64 }

func (e *tooWideError) Error() string {
	return fmt.Sprintf("pld: the composed window needs %.0f grid points, more than %d", e.width, maxFFTSize)
}

// epsilon is the smallest ε ≥ 0 with δ(ε) ≤ delta, where
//
//	δ(ε) = extra + Σ_{ℓ_j > ε} r_j (1 − e^{ε − ℓ_j}),
//
// solved exactly inside the grid cell where δ crosses delta and rounded up.
func (c *composed) epsilon(delta float64) (float64, error) {
	if c.extra >= delta {
		return 0, fmt.Errorf("pld: no finite ε at δ = %v: the mass of infinite privacy loss and the tail bounds already reach %.3g; add noise, use fewer steps or a larger δ", delta, c.extra)
	}
	eh := math.Exp(-c.h)
	var a, cc float64 // A_j = Σ_{i≥j} r_i, C_j = Σ_{i≥j} r_i e^{ℓ_j − ℓ_i}
	n := len(c.r)
	for j := n - 1; j >= 0; j-- {
		a += c.r[j]
		cc = c.r[j] + eh*cc
		lj := float64(c.lo+j) * c.h
		// On [ℓ_{j−1}, ℓ_j]: δ(ε) = extra + A_j − e^{ε−ℓ_j} C_j.
		if j > 0 && c.extra+a-eh*cc <= delta {
			continue
		}
		if cc <= 0 {
			// No mass at or above ℓ_j: δ = extra ≤ delta from ℓ_j on... and below, see next.
			if j == 0 {
				return 0, nil
			}
			continue
		}
		e := lj + math.Log((c.extra+a-delta)/cc)
		if j > 0 {
			e = math.Max(e, lj-c.h)
		}
		if e <= 0 {
			return 0, nil
		}
		return math.Nextafter(e*(1+1e-12), math.Inf(1)), nil
	}
	return 0, nil
}
