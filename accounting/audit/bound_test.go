package audit

import (
	"math"
	"math/big"
	"testing"
)

// brutePMF returns P[Binomial(r, q) = k] for k = 0..r, q = e^ε/(1 + e^ε), in exact 256-bit
// floats from binomial coefficients built by Pascal's rule: an evaluation independent of
// PValue's log-gamma route.
func brutePMF(r int, eps float64) []*big.Float {
	const prec = 256
	e := new(big.Float).SetPrec(prec).SetFloat64(math.Exp(eps))
	one := new(big.Float).SetPrec(prec).SetInt64(1)
	den := new(big.Float).SetPrec(prec).Add(one, e)
	q := new(big.Float).SetPrec(prec).Quo(e, den)
	p := new(big.Float).SetPrec(prec).Quo(one, den)
	row := []*big.Int{big.NewInt(1)}
	for n := 1; n <= r; n++ {
		next := make([]*big.Int, n+1)
		next[0], next[n] = big.NewInt(1), big.NewInt(1)
		for k := 1; k < n; k++ {
			next[k] = new(big.Int).Add(row[k-1], row[k])
		}
		row = next
	}
	pmf := make([]*big.Float, r+1)
	for k := range pmf {
		t := new(big.Float).SetPrec(prec).SetInt(row[k])
		for range k {
			t.Mul(t, q)
		}
		for range r - k {
			t.Mul(t, p)
		}
		pmf[k] = t
	}
	return pmf
}

// bruteSum returns Σ pmf[k] over k in [lo, hi].
func bruteSum(pmf []*big.Float, lo, hi int) float64 {
	sum := new(big.Float).SetPrec(256)
	for k := max(lo, 0); k <= min(hi, len(pmf)-1); k++ {
		sum.Add(sum, pmf[k])
	}
	f, _ := sum.Float64()
	return f
}

// brutePValue is Corollary 5.4 evaluated with brutePMF.
func brutePValue(m, r, v int, eps, delta float64) float64 {
	pmf := brutePMF(r, eps)
	beta := bruteSum(pmf, v, r)
	alpha := 0.0
	for i := 1; i <= v; i++ {
		alpha = math.Max(alpha, bruteSum(pmf, v-i, v-1)/float64(i))
	}
	return math.Min(1, beta+2*float64(m)*delta*alpha)
}

func TestPValueMatchesBruteForce(t *testing.T) {
	cases := []struct {
		m, r, v    int
		eps, delta float64
	}{
		{10, 10, 10, 0, 0},
		{10, 10, 7, 0.5, 0},
		{100, 20, 17, 1, 1e-5},
		{1000, 60, 55, 2, 1e-5},
		{1000, 60, 40, 0.3, 1e-3},
		{200, 200, 180, 3, 1e-6},
		{50, 30, 0, 1, 1e-5},
		{500, 150, 150, 4, 1e-5},
	}
	for _, c := range cases {
		got, err := PValue(c.m, c.r, c.v, c.eps, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		want := brutePValue(c.m, c.r, c.v, c.eps, c.delta)
		if !(want > 0) || math.Abs(got-want) > 1e-10*want {
			t.Errorf("PValue(m=%d, r=%d, v=%d, ε=%g, δ=%g) = %.15g, brute force %.15g", c.m, c.r, c.v, c.eps, c.delta, got, want)
		}
	}
}

// With δ = 0 and every guess correct the p-value is q^r, so the bound has the closed form
// ε = logit(level^{1/r}).
func TestEpsilonLowerBoundClosedForm(t *testing.T) {
	for _, c := range []struct {
		r          int
		confidence float64
	}{{10, 0.95}, {100, 0.95}, {1000, 0.95}, {50, 0.99}, {5, 0.9}} {
		got, err := EpsilonLowerBound(c.r, c.r, c.r, 0, c.confidence)
		if err != nil {
			t.Fatal(err)
		}
		q := math.Pow(1-c.confidence, 1/float64(c.r))
		want := math.Log(q / (1 - q))
		if got > want || want-got > 1e-8 {
			t.Errorf("r = v = %d at %g: ε_lower = %.12g, closed form %.12g (must not exceed it)", c.r, c.confidence, got, want)
		}
	}
	// r = 10 all correct at 95%: q = 0.05^{1/10} = 0.741134, ε = 1.05190.
	got, _ := EpsilonLowerBound(10, 10, 10, 0, 0.95)
	if math.Abs(got-1.0519) > 1e-4 {
		t.Errorf("r = v = 10: ε_lower = %.6g, want 1.0519", got)
	}
}

// The bound is the rejected end of the bracket: its p-value is below the level, and a hair
// above it the p-value is not.
func TestEpsilonLowerBoundIsTheBoundary(t *testing.T) {
	for _, c := range []struct {
		m, r, v int
		delta   float64
	}{{1000, 100, 90, 1e-5}, {1000, 200, 150, 1e-5}, {10000, 2000, 1300, 1e-5}, {100, 100, 100, 1e-3}} {
		eps, err := EpsilonLowerBound(c.m, c.r, c.v, c.delta, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		lo, _ := PValue(c.m, c.r, c.v, eps, c.delta)
		hi, _ := PValue(c.m, c.r, c.v, eps+1e-6, c.delta)
		if !(lo < 0.05) || hi < 0.05 {
			t.Errorf("%+v: ε_lower = %g has p-value %g, at ε + 1e-6 %g: want < 0.05 then ≥ 0.05", c, eps, lo, hi)
		}
	}
}

func TestEpsilonLowerBoundMonotone(t *testing.T) {
	bound := func(m, r, v int, delta, conf float64) float64 {
		e, err := EpsilonLowerBound(m, r, v, delta, conf)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	// More correct guesses: a larger bound.
	prev := -1.0
	for v := 50; v <= 100; v += 5 {
		e := bound(1000, 100, v, 1e-5, 0.95)
		if e < prev {
			t.Errorf("v = %d: ε_lower %g < %g at v − 5", v, e, prev)
		}
		prev = e
	}
	if prev <= 0 {
		t.Errorf("100 of 100 correct gives ε_lower = %g, want > 0", prev)
	}
	// A larger δ or a higher confidence: a smaller bound.
	if a, b := bound(1000, 100, 95, 1e-5, 0.95), bound(1000, 100, 95, 1e-3, 0.95); b > a {
		t.Errorf("δ 1e-3 gives %g > %g at δ 1e-5", b, a)
	}
	if a, b := bound(1000, 100, 95, 1e-5, 0.95), bound(1000, 100, 95, 1e-5, 0.99); b > a {
		t.Errorf("99%% confidence gives %g > %g at 95%%", b, a)
	}
	// The same accuracy on more guesses: a larger bound.
	if a, b := bound(2000, 100, 90, 0, 0.95), bound(2000, 1000, 900, 0, 0.95); b <= a {
		t.Errorf("900/1000 gives %g ≤ %g for 90/100", b, a)
	}
	// Half right is chance: nothing is rejected.
	if e := bound(1000, 500, 250, 1e-5, 0.95); e != 0 {
		t.Errorf("250 of 500 correct: ε_lower = %g, want 0", e)
	}
}

func TestBoundErrors(t *testing.T) {
	for _, c := range []struct {
		m, r, v    int
		eps, delta float64
	}{{10, 11, 5, 1, 0}, {10, 5, 6, 1, 0}, {10, 5, -1, 1, 0}, {10, 5, 3, -1, 0}, {10, 5, 3, math.NaN(), 0}, {10, 5, 3, 1, 2}} {
		if _, err := PValue(c.m, c.r, c.v, c.eps, c.delta); err == nil {
			t.Errorf("PValue%+v: no error", c)
		}
	}
	if _, err := EpsilonLowerBound(10, 5, 5, 0, 1); err == nil {
		t.Error("confidence 1: no error")
	}
}
