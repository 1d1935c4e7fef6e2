package modelmix

import (
	"math"
	"testing"
)

func TestLogQ(t *testing.T) {
	// Below the switch, ln(0.5·erfc(x/√2)) is the definition; at and above it the asymptotic
	// series must agree with erfc where erfc is still representable (x up to about 37).
	for _, x := range []float64{-40, -5, -1, 0, 0.5, 3, 10, 19.9, 20, 22, 27, 33, 37} {
		want := math.Log(0.5 * math.Erfc(x/math.Sqrt2))
		if got := logQ(x); math.Abs(got-want) > 1e-13*math.Max(1, math.Abs(want)) {
			t.Errorf("logQ(%v) = %.17g, want %.17g", x, got, want)
		}
	}
	// Far tail: Q(x) = φ(x)/x·(1 − 1/x² + 3/x⁴ − O(x⁻⁶)); at x = 300 the omitted terms are
	// below 1e-12 relative.
	for _, x := range []float64{300, 1000} {
		want := -x*x/2 - math.Log(x*math.Sqrt(2*math.Pi)) + math.Log(1-1/(x*x)+3/(x*x*x*x))
		if got := logQ(x); math.Abs(got-want) > 1e-12*math.Abs(want) {
			t.Errorf("logQ(%v) = %.17g, want %.17g", x, got, want)
		}
	}
}

// refMass is Φ(b) − Φ(a) by the textbook difference of tails, accurate when the result is
// not much smaller than the tails themselves.
func refMass(a, b float64) float64 {
	if a >= 0 {
		return 0.5*math.Erfc(a/math.Sqrt2) - 0.5*math.Erfc(b/math.Sqrt2)
	}
	return 0.5*math.Erfc(-b/math.Sqrt2) - 0.5*math.Erfc(-a/math.Sqrt2)
}

func TestLogMass(t *testing.T) {
	g := newGaussLegendre()
	phi := func(x float64) float64 { return math.Exp(-x*x/2) / math.Sqrt(2*math.Pi) }
	// narrow is ln(Φ(b) − Φ(a)) for b − a ≪ 1 by the Taylor expansion around the midpoint m:
	// w·φ(m)·(1 + (m²−1)w²/24 + (m⁴−6m²+3)w⁴/1920 + O(w⁶)), w = b − a (exact in floating
	// point for such close a and b).
	narrow := func(a, b float64) float64 {
		w, m := b-a, (a+b)/2
		m2 := m * m
		return math.Log(w*phi(m)) + math.Log1p((m2-1)*w*w/24+(m2*m2-6*m2+3)*w*w*w*w/1920)
	}
	tests := []struct {
		name string
		a, b float64
		want float64 // ln(Φ(b) − Φ(a))
		tol  float64 // absolute, on the log
	}{
		// Well-conditioned intervals, on both sides of the quadrature/tail-difference switch.
		{"wide across 0", -3, 4, math.Log(refMass(-3, 4)), 1e-14},
		{"narrow across 0", -0.3, 0.2, math.Log(refMass(-0.3, 0.2)), 1e-14},
		{"across 0, width 2", -1.5, 0.5, math.Log(refMass(-1.5, 0.5)), 1e-14},
		{"across 0, width 2.1", -1.5, 0.6, math.Log(refMass(-1.5, 0.6)), 1e-14},
		{"right, spread 0.99", 0.5, 0.5 + (-0.5 + math.Sqrt(0.25+2*0.99)), math.Log(refMass(0.5, 0.5+(-0.5+math.Sqrt(0.25+2*0.99)))), 1e-13},
		{"right, spread 1.01", 0.5, 0.5 + (-0.5 + math.Sqrt(0.25+2*1.01)), math.Log(refMass(0.5, 0.5+(-0.5+math.Sqrt(0.25+2*1.01)))), 1e-13},
		{"right tail", 5, 9, math.Log(refMass(5, 9)), 1e-12},
		{"left tail", -9, -5, math.Log(refMass(5, 9)), 1e-12},
		// Narrow intervals: Φ(m+w/2) − Φ(m−w/2) = w·φ(m)·(1 + (m²−1)w²/24 + O(w⁴)).
		{"tiny width at 0", -5e-7, 5e-7, math.Log(1e-6 * phi(0)), 1e-13},
		{"tiny width at 3", 3 - 5e-7, 3 + 5e-7, narrow(3-5e-7, 3+5e-7), 1e-14},
		{"tiny width at -3", -3 - 5e-7, -3 + 5e-7, narrow(-3-5e-7, -3+5e-7), 1e-14},
		{"small width at 50", 50 - 5e-4, 50 + 5e-4, narrow(50-5e-4, 50+5e-4), 1e-12},
		// Far tail, wide: Q(b) is negligible next to Q(a), so the mass is Q(a) (asymptotic).
		{"far tail", 300, 310, -45000 - math.Log(300*math.Sqrt(2*math.Pi)) + math.Log(1-1.0/90000+3.0/8.1e9), 1e-9},
	}
	for _, tt := range tests {
		got := g.logMass(tt.a, tt.b)
		if math.Abs(got-tt.want) > tt.tol*math.Max(1, math.Abs(tt.want)) {
			t.Errorf("%s: logMass(%v, %v) = %.17g, want %.17g", tt.name, tt.a, tt.b, got, tt.want)
		}
		if mirror := g.logMass(-tt.b, -tt.a); math.Abs(mirror-got) > 1e-13*math.Max(1, math.Abs(got)) {
			t.Errorf("%s: not symmetric: %v vs %v", tt.name, got, mirror)
		}
	}
}
