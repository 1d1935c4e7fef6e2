package pld

import (
	"math"
	"testing"
)

// deltaAt is δ(ε) of a composed window, summed directly (the reference for epsilon's cell
// solve).
func (c *composed) deltaAt(eps float64) float64 {
	s := c.extra
	for j, v := range c.r {
		if l := float64(c.lo+j) * c.h; l > eps {
			s += v * -math.Expm1(eps-l)
		}
	}
	return s
}

func phiStd(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// exactStepDelta is the hockey-stick divergence of one Poisson-subsampled Gaussian step, both
// orders, from the closed forms (Φ of the point where the monotone loss crosses ε).
func exactStepDelta(q, sigma, eps float64, d direction) float64 {
	if d == remove {
		if eps <= math.Log1p(-q) {
			return -math.Expm1(eps)
		}
		x := sigma*sigma*math.Log((math.Exp(eps)-1+q)/q) + 0.5
		return (1-q)*phiStd(-x/sigma) + q*phiStd((1-x)/sigma) - math.Exp(eps)*phiStd(-x/sigma)
	}
	if eps >= -math.Log1p(-q) {
		return 0
	}
	x := sigma*sigma*math.Log((math.Exp(-eps)-1+q)/q) + 0.5
	return phiStd(x/sigma) - math.Exp(eps)*((1-q)*phiStd(x/sigma)+q*phiStd((x-1)/sigma))
}

func bisectEps(f func(float64) float64, delta float64) float64 {
	lo, hi := 0.0, 60.0
	for range 200 {
		mid := (lo + hi) / 2
		if f(mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// One step: the PLD's ε must be at or above the exact ε and within the discretisation error.
func TestSingleStepAgainstClosedForm(t *testing.T) {
	for _, tc := range []struct{ q, sigma, delta float64 }{
		{0.01, 1, 1e-5}, {0.1, 0.8, 1e-5}, {0.5, 2, 1e-6}, {0.004, 0.6, 1e-5}, {0.9, 1.5, 1e-3},
	} {
		want := 0.0
		for _, d := range []direction{remove, add} {
			want = math.Max(want, bisectEps(func(e float64) float64 { return exactStepDelta(tc.q, tc.sigma, e, d) }, tc.delta))
		}
		got, err := epsilonConnectTheDots([]group{{tc.q, tc.sigma, 1}}, 5e-4, tc.delta, &pmfCache{})
		if err != nil {
			t.Fatal(err)
		}
		if got < want-1e-9 || got > want+2e-3 {
			t.Errorf("q=%v σ=%v δ=%v: PLD ε %.8f, exact %.8f", tc.q, tc.sigma, tc.delta, got, want)
		}
	}
}

// Two steps: δ(ε) of the removal pair composed twice, by direct 2-D integration of
// E_{P×P}[(1 − e^{ε−ℓ(x₁)−ℓ(x₂)})₊] with the trapezoid rule, independent of the PLD code.
func TestTwoStepsAgainstIntegral(t *testing.T) {
	const q, sigma, eps = 0.2, 1.0, 0.3
	lossOf := func(x float64) float64 { return math.Log1p(q * math.Expm1((2*x-1)/(2*sigma*sigma))) }
	dens := func(x float64) float64 {
		n := func(z float64) float64 { return math.Exp(-z*z/(2*sigma*sigma)) / (sigma * math.Sqrt(2*math.Pi)) }
		return (1-q)*n(x) + q*n(x-1)
	}
	const n = 2400
	lo, hi := -9*sigma, 1+9*sigma
	w := (hi - lo) / n
	xs, ps, ls := make([]float64, n+1), make([]float64, n+1), make([]float64, n+1)
	for i := range xs {
		xs[i] = lo + float64(i)*w
		ps[i], ls[i] = dens(xs[i])*w, lossOf(xs[i])
		if i == 0 || i == n {
			ps[i] /= 2
		}
	}
	var want float64
	for i := range xs {
		for j := range xs {
			if l := ls[i] + ls[j]; l > eps {
				want += ps[i] * ps[j] * -math.Expm1(eps-l)
			}
		}
	}
	c, err := compose([]selfComposed{{discretise(q, sigma, remove, 1e-4), 2}}, 1e-4, 1e-15)
	if err != nil {
		t.Fatal(err)
	}
	got := c.deltaAt(eps)
	if got < want*(1-1e-5) || got > want*(1+2e-3) {
		t.Errorf("δ(%v) after two steps: PLD %.10g, integral %.10g", eps, got, want)
	}
}

// The FFT power must agree with repeated direct convolution of the same discrete PLD.
func TestFFTPowerAgainstDirectConvolution(t *testing.T) {
	d := discretise(0.3, 1, remove, 0.02)
	const T = 40
	ref := []float64{1}
	for range T {
		next := make([]float64, len(ref)+len(d.p)-1)
		for i, a := range ref {
			for j, b := range d.p {
				next[i+j] += a * b
			}
		}
		ref = next
	}
	c, err := compose([]selfComposed{{d, T}}, 0.02, 1e-30)
	if err != nil {
		t.Fatal(err)
	}
	var maxErr float64
	for j, v := range c.r {
		k := c.lo + j - T*d.offset
		want := 0.0
		if k >= 0 && k < len(ref) {
			want = ref[k]
		}
		maxErr = math.Max(maxErr, math.Abs(v-want))
	}
	if maxErr > 1e-14 {
		t.Errorf("FFT power differs from direct convolution by %g", maxErr)
	}
	// The window must hold all the mass direct convolution found, up to the tail bound.
	var in float64
	for _, v := range c.r {
		in += v
	}
	var all float64
	for _, v := range ref {
		all += v
	}
	if math.Abs(in-all) > 1e-12 {
		t.Errorf("window mass %v, total %v", in, all)
	}
}

// Both orders' discrete PLDs keep P-mass (sum to 1 with the mass at +∞) and Q-mass
// (Σ p e^{−ℓ} ≤ 1): connect-the-dots preserves both (package doc).
func TestDiscretisationMasses(t *testing.T) {
	for _, d := range []direction{remove, add} {
		for _, tc := range []struct{ q, sigma float64 }{{0.01, 1}, {0.3, 0.7}, {1, 2}} {
			p := discretise(tc.q, tc.sigma, d, 1e-3)
			var mass, qmass float64
			for i, v := range p.p {
				if v < 0 {
					t.Fatalf("negative mass %v", v)
				}
				mass += v
				qmass += v * math.Exp(-float64(p.offset+i)*p.h)
			}
			if math.Abs(mass+p.inf-1) > 1e-12 || qmass > 1+1e-12 || qmass < 1-1e-9 {
				t.Errorf("dir %v q=%v σ=%v: P-mass %v (+∞ %v), Q-mass %v", d, tc.q, tc.sigma, mass, p.inf, qmass)
			}
		}
	}
}
