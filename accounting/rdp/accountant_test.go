package rdp

import (
	"math"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// directA is A_α = ∫ N(z; 0, σ²) ((1−q) + q·exp((2z−1)/(2σ²)))^α dz by the trapezoid rule on a
// wide grid: the definition of the sampled Gaussian's moment (Mironov, Talwar & Zhang 2019,
// Section 3), evaluated independently of the series in sampled_gaussian.go.
func directA(q, sigma, alpha float64) float64 {
	lo, hi := -40*sigma-10, 40*sigma+10
	const n = 400000
	h := (hi - lo) / n
	var sum float64
	for i := 0; i <= n; i++ {
		z := lo + float64(i)*h
		logMu0 := -z*z/(2*sigma*sigma) - math.Log(sigma*math.Sqrt(2*math.Pi))
		r := math.Log1p(q * math.Expm1((2*z-1)/(2*sigma*sigma)))
		f := math.Exp(logMu0 + alpha*r)
		if i == 0 || i == n {
			f /= 2
		}
		sum += f
	}
	return sum * h
}

func TestSampledGaussianAgainstIntegral(t *testing.T) {
	for _, tc := range []struct{ q, sigma, alpha float64 }{
		{0.01, 1.1, 2}, {0.01, 1.1, 2.5}, {0.01, 1.1, 7.3}, {0.1, 2, 3}, {0.1, 2, 12.75},
		{0.004266, 1.1, 8}, {0.3, 0.8, 1.5}, {0.05, 5, 33.3}, {0.5, 1, 4.5},
	} {
		got, err := SampledGaussian(tc.q, tc.sigma, tc.alpha)
		if err != nil {
			t.Fatal(err)
		}
		want := math.Log(directA(tc.q, tc.sigma, tc.alpha)) / (tc.alpha - 1)
		if math.Abs(got-want) > 1e-7*math.Max(1, want) && math.Abs(got-want)/want > 1e-6 {
			t.Errorf("q=%v σ=%v α=%v: rdp %.12g, integral %.12g", tc.q, tc.sigma, tc.alpha, got, want)
		}
	}
}

func TestFractionalContinuity(t *testing.T) {
	// The fractional series must agree with the integer formula as α approaches an integer.
	for _, a := range []float64{2, 3, 8, 20} {
		i, _ := SampledGaussian(0.02, 1.3, a)
		f, _ := SampledGaussian(0.02, 1.3, a+1e-9)
		if math.Abs(i-f) > 1e-6*i {
			t.Errorf("α=%v: integer %v, fractional %v", a, i, f)
		}
	}
}

func TestFullBatchIsGaussian(t *testing.T) {
	a, _ := New(accounting.Run{})
	const sigma, T = 3.0, 50
	if err := a.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.FullBatch, NoiseMultiplier: sigma, SampleRate: 1, Count: T}); err != nil {
		t.Fatal(err)
	}
	orders, rdp := a.Curve()
	for i, o := range orders {
		if want := T * o / (2 * sigma * sigma); math.Abs(rdp[i]-want) > 1e-12*want {
			t.Fatalf("α=%v: %v want %v", o, rdp[i], want)
		}
	}
}

// The TensorFlow Privacy tutorial case (DESIGN.md): q = 256/60000, σ = 1.1, 60 epochs, δ = 1e-5.
func TestTFPrivacyReference(t *testing.T) {
	q := 256.0 / 60000
	steps := int(math.Ceil(60 / q))
	for _, tc := range []struct {
		classic bool
		want    float64
	}{{false, 2.597}, {true, 3.008}} {
		a, _ := NewWithOptions(accounting.Run{}, Options{Classic: tc.classic})
		if err := a.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: 1.1, SampleRate: q, Count: steps}); err != nil {
			t.Fatal(err)
		}
		g, err := a.Epsilon(1e-5)
		if err != nil {
			t.Fatal(err)
		}
		// Our grid is finer than dp_accounting's, so ε may be slightly lower, never higher.
		if g.Epsilon > tc.want+5e-4 || g.Epsilon < tc.want-0.02 {
			t.Errorf("classic=%v: ε = %.4f at α = %v, want ≈ %v", tc.classic, g.Epsilon, g.Order, tc.want)
		}
	}
}

func TestMonotone(t *testing.T) {
	eps := func(q, sigma float64, steps int) float64 {
		a, _ := New(accounting.Run{})
		if err := a.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: sigma, SampleRate: q, Count: steps}); err != nil {
			t.Fatal(err)
		}
		g, err := a.Epsilon(1e-5)
		if err != nil {
			t.Fatal(err)
		}
		return g.Epsilon
	}
	base := eps(0.01, 1, 1000)
	if !(eps(0.01, 1, 2000) > base && eps(0.02, 1, 1000) > base && eps(0.01, 1.5, 1000) < base) {
		t.Errorf("ε not monotone in steps, q and 1/σ")
	}
}

func TestComposeRefuses(t *testing.T) {
	a, _ := New(accounting.Run{})
	ok := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: 1, SampleRate: 0.1}
	for name, s := range map[string]accounting.Step{
		"shuffled":       {Mechanism: accounting.Gaussian, Sampling: accounting.Shuffled, NoiseMultiplier: 1, SampleRate: 0.1},
		"non-private":    {Mechanism: accounting.NonPrivate, Sampling: accounting.Poisson, SampleRate: 0.1},
		"zero noise":     {Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, SampleRate: 0.1},
		"replace-one":    {Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, Neighbouring: accounting.ReplaceOne, NoiseMultiplier: 1, SampleRate: 0.1},
		"q out of range": {Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: 1, SampleRate: 1.5},
	} {
		if err := a.Compose(s); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if a.Steps() != 0 {
		t.Errorf("refused steps were counted")
	}
	if err := a.Compose(ok); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkLiveStep(b *testing.B) {
	a, _ := New(accounting.Run{})
	s := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: 1.1, SampleRate: 256.0 / 60000}
	a.Compose(s)
	b.ResetTimer()
	for range b.N {
		a.Compose(s)
	}
}
