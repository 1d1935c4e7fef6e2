package gdp

import (
	"math"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

func TestMuAndEpsilon(t *testing.T) {
	a, _ := New(accounting.Run{})
	q, sigma, T := 256.0/60000, 1.1, 14062
	if err := a.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: sigma, SampleRate: q, Count: T}); err != nil {
		t.Fatal(err)
	}
	// μ by hand: q·√T·√(e^{1/σ²} − 1).
	want := q * math.Sqrt(float64(T)) * math.Sqrt(math.Exp(1/(sigma*sigma))-1)
	if math.Abs(a.Mu()-want) > 1e-12 {
		t.Errorf("μ = %v, want %v", a.Mu(), want)
	}
	g, err := a.Epsilon(1e-5)
	if err != nil {
		t.Fatal(err)
	}
	// The returned ε solves δ(ε) = 1e-5 from above.
	if d := Delta(a.Mu(), g.Epsilon); d > 1e-5 || Delta(a.Mu(), g.Epsilon*(1-1e-9)) <= 1e-5 {
		t.Errorf("ε = %v: δ(ε) = %v", g.Epsilon, d)
	}
	if g.Label != accounting.Approximate {
		t.Errorf("label %v for a subsampled run", g.Label)
	}
}

// For full batch, μ-GDP with μ = 1/σ is exactly the Gaussian mechanism, whose (ε, δ) curve is
// Balle & Wang (2018), Theorem 8: δ = Φ(1/(2σ) − εσ) − e^ε Φ(−1/(2σ) − εσ).
func TestFullBatchIsAnalyticGaussian(t *testing.T) {
	for _, sigma := range []float64{0.5, 1, 3, 10} {
		a, _ := New(accounting.Run{})
		a.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.FullBatch, NoiseMultiplier: sigma, SampleRate: 1})
		g, _ := a.Epsilon(1e-5)
		bw := normCDF(1/(2*sigma)-g.Epsilon*sigma) - math.Exp(g.Epsilon)*normCDF(-1/(2*sigma)-g.Epsilon*sigma)
		if math.Abs(bw-1e-5) > 1e-9 || g.Label != accounting.Certified {
			t.Errorf("σ = %v: ε = %v gives Balle–Wang δ = %v (label %v)", sigma, g.Epsilon, bw, g.Label)
		}
	}
}

func TestRefuses(t *testing.T) {
	a, _ := New(accounting.Run{})
	if err := a.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.ShuffledOnce, NoiseMultiplier: 1, SampleRate: 0.1}); err == nil {
		t.Error("shuffled accepted")
	}
}

// A step whose μ overflows is refused and leaves the accountant as it was (the Accountant
// contract). Before, the overflowed μ² (NaN where q² underflows to 0 against e^{1/σ²} = +Inf)
// stayed in the accountant, which then answered ε = 0 with no error.
func TestRefusedStepLeavesAccountantUnchanged(t *testing.T) {
	full := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.FullBatch, NoiseMultiplier: 3, SampleRate: 1, Count: 10}
	for _, c := range []struct {
		name         string
		sigma, q     float64
		wantOverflow string
	}{
		{"q² underflows, e^{1/σ²} overflows", 1e-300, 1e-300, "NaN"},
		{"tiny σ, tiny q", 0.01, 1e-200, "NaN"},
		{"e^{1/σ²} overflows", 0.01, 0.01, "+Inf"},
	} {
		a, _ := New(accounting.Run{})
		if err := a.Compose(full); err != nil {
			t.Fatal(err)
		}
		before, err := a.Epsilon(1e-5)
		if err != nil {
			t.Fatal(err)
		}
		mu := a.Mu()
		bad := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, Neighbouring: accounting.AddRemove,
			NoiseMultiplier: c.sigma, SampleRate: c.q, Count: 1}
		if err := a.Compose(bad); err == nil {
			t.Errorf("%s: step accepted, μ = %v", c.name, a.Mu())
			continue
		}
		after, err := a.Epsilon(1e-5)
		if err != nil || after != before || a.Mu() != mu || a.Label() != accounting.Certified {
			t.Errorf("%s (μ² %s): after the refusal μ = %v, ε = %v (%s), %v; want μ = %v, ε = %v (certified)",
				c.name, c.wantOverflow, a.Mu(), after.Epsilon, after.Label, err, mu, before.Epsilon)
		}
	}
}

// TestLargeEpsilonInLogSpace: a full-batch run with little noise has ε far above 709, where e^ε
// overflows; the old linear-space δ(ε) saturated ε at 709.44 for every such μ.
func TestLargeEpsilonInLogSpace(t *testing.T) {
	const delta = 1e-5
	prev := 0.0
	for _, mu := range []float64{30, 40, 41, 60, 100} {
		eps, err := EpsilonOf(mu, delta)
		if err != nil {
			t.Fatalf("μ = %v: %v", mu, err)
		}
		if eps <= prev {
			t.Errorf("μ = %v: ε = %v not above ε = %v of the previous μ", mu, eps, prev)
		}
		if ld := logDelta(mu, eps); ld > math.Log(delta) || logDelta(mu, eps*(1-1e-9)) <= math.Log(delta) {
			t.Errorf("μ = %v: ε = %v does not solve δ(ε) = %v from above (log δ(ε) = %v)", mu, eps, delta, ld)
		}
		prev = eps
	}
	if prev < 709.44 {
		t.Errorf("ε(μ = 100) = %v, want above the old saturation 709.44", prev)
	}
}

func TestLogNormCDFBranchesAgree(t *testing.T) {
	lo, hi := logNormCDF(-30-1e-9), logNormCDF(-30+1e-9)
	if math.Abs(lo-hi) > 1e-8*math.Abs(hi) {
		t.Errorf("log Φ around −30: series %v, direct %v", lo, hi)
	}
	for _, x := range []float64{-5, 0, 3} {
		if got, want := logNormCDF(x), math.Log(normCDF(x)); got != want {
			t.Errorf("logNormCDF(%v) = %v, want %v", x, got, want)
		}
	}
}
