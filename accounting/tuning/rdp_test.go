package tuning

import (
	"math"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting/rdp"
)

// gaussian is the RDP curve of T compositions of the Gaussian mechanism with noise multiplier
// σ: ε(λ) = ρλ with ρ = T/(2σ²).
func gaussian(rho float64) func(float64) float64 {
	return func(a float64) float64 { return rho * a }
}

// fineOrders is 1.001 to 400 in steps of 0.001.
func fineOrders() []float64 {
	var o []float64
	for k := 1001; k <= 400000; k++ {
		o = append(o, float64(k)/1000)
	}
	return o
}

func TestTheorem2GaussianCandidate(t *testing.T) {
	// For ε(λ) = ρλ the λ̂ terms (1 − 1/λ̂)ρλ̂ + log(1/γ)/λ̂ = ρ(λ̂−1) + log(1/γ)/λ̂ are least at
	// λ̂* = sqrt(log(1/γ)/ρ), where they are 2·sqrt(ρ·log(1/γ)) − ρ (λ̂* ≥ 1 in every case
	// here). The search's RDP must never be below Theorem 2 at that exact optimum (both made
	// non-decreasing in λ), and on a fine grid of λ̂ it must be close to it.
	orders := fineOrders()
	tests := []struct{ rho, eta, gamma float64 }{
		{0.05, 1, 0.1},
		{0.05, 0, 0.02691825958900153},
		{0.5, 0.5, 0.01},
		{0.01, -0.5, 0.3},
		{0.2, 3, 0.05},
	}
	for _, tc := range tests {
		d := TruncatedNegativeBinomial(tc.eta, tc.gamma)
		got, err := RDP(gaussian(tc.rho), d, orders)
		if err != nil {
			t.Fatal(err)
		}
		logInvGamma := -math.Log(tc.gamma)
		if math.Sqrt(logInvGamma/tc.rho) < 1 {
			t.Fatalf("case %+v: λ̂* below 1", tc)
		}
		c := (1 + tc.eta) * (2*math.Sqrt(tc.rho*logInvGamma) - tc.rho)
		mean, _ := d.Mean()
		exact := make([]float64, len(orders))
		for i, lambda := range orders {
			exact[i] = tc.rho*lambda + c + math.Log(mean)/(lambda-1)
		}
		envelope(orders, exact) // the bound at λ' holds at every λ < λ'
		for _, lambda := range []float64{1.5, 2, 8, 32, 128} {
			i := int(math.Round(lambda*1000)) - 1001
			if got[i] < exact[i] || got[i] > exact[i]*(1+1e-5) {
				t.Errorf("%v, ρ = %v, λ = %v: RDP %.12g, Theorem 2 at the optimal λ̂ %.12g", d, tc.rho, lambda, got[i], exact[i])
			}
		}
	}
}

// gaussianDelta is the exact δ(ε) of the Gaussian mechanism with μ = sensitivity/σ (Balle &
// Wang 2018, Theorem 8): Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2).
func gaussianDelta(mu, eps float64) float64 {
	phi := func(x float64) float64 { return math.Erfc(-x/math.Sqrt2) / 2 }
	return phi(-eps/mu+mu/2) - math.Exp(eps)*phi(-eps/mu-mu/2)
}

func TestTheorem6GaussianCandidate(t *testing.T) {
	// The search's RDP is at least Theorem 6 with the candidate's exact δ̂ at the largest ε̂
	// allowed (both made non-decreasing in λ): converting the candidate's RDP to δ̂ may only
	// overstate δ̂.
	orders := rdp.DefaultOrders()
	for _, sigma := range []float64{2, 5, 20} {
		rho := 1 / (2 * sigma * sigma) // T = 1
		for _, mu := range []float64{0.5, 1, 10} {
			got, err := RDP(gaussian(rho), Poisson(mu), orders)
			if err != nil {
				t.Fatal(err)
			}
			exact := make([]float64, len(orders))
			for i, lambda := range orders {
				epsHat := math.Log1p(1 / (lambda - 1))
				exact[i] = math.Max(rho*lambda+mu*gaussianDelta(1/sigma, epsHat)+math.Log(mu)/(lambda-1), 0)
			}
			envelope(orders, exact)
			for i, lambda := range orders {
				if got[i] < exact[i]*(1-1e-12) {
					t.Fatalf("σ = %v, μ = %v, λ = %v: RDP %.12g below Theorem 6 with the exact δ̂: %.12g", sigma, mu, lambda, got[i], exact[i])
				}
			}
		}
	}
}

func TestGeometricNearOneIsOneCandidate(t *testing.T) {
	// γ → 1 with η = 1: K = 1 almost surely, E[K] → 1, and the search costs what one candidate
	// costs, up to terms in log(1/γ).
	orders := rdp.DefaultOrders()
	candidate := func(a float64) float64 {
		r, _ := rdp.SampledGaussian(0.01, 1, a)
		return 1000 * r
	}
	prev := math.Inf(1)
	for _, gap := range []float64{1e-2, 1e-4, 1e-6, 1e-9} {
		d := Geometric(1 - gap)
		mean, err := d.Mean()
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(mean-1) > 2*gap {
			t.Errorf("γ = 1 − %v: E[K] = %v", gap, mean)
		}
		o, err := Cost(candidate, d, orders, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		if o.Extra < 0 || o.Extra > 100*gap+1e-9 || o.Extra > prev {
			t.Errorf("γ = 1 − %v: the search costs %v more than one candidate (%v)", gap, o.Extra, o)
		}
		prev = o.Extra
	}
}

func TestPoissonMonotoneInMu(t *testing.T) {
	orders := rdp.DefaultOrders()
	curve, err := SampledGaussianCurve(0.02, 1.1, 500, orders)
	if err != nil {
		t.Fatal(err)
	}
	prevRDP, prevEps := make([]float64, len(orders)), 0.0
	for _, mu := range []float64{0.1, 0.5, 1, 2, 5, 10, 20, 50, 100} {
		r, err := RDPFromCurve(orders, curve, Poisson(mu))
		if err != nil {
			t.Fatal(err)
		}
		for i := range r {
			if r[i] < prevRDP[i] {
				t.Fatalf("μ = %v, λ = %v: RDP %v below the previous μ's %v", mu, orders[i], r[i], prevRDP[i])
			}
		}
		g, err := guarantee(Name, orders, r, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		if g.Epsilon < prevEps {
			t.Errorf("μ = %v: ε = %v below the previous μ's %v", mu, g.Epsilon, prevEps)
		}
		prevRDP, prevEps = r, g.Epsilon
	}
}

func TestSearchCostsAtLeastOneCandidate(t *testing.T) {
	orders := rdp.DefaultOrders()
	dists := []Distribution{
		Logarithmic(0.5), Logarithmic(0.02691825958900153), Geometric(0.9), Geometric(0.1),
		TruncatedNegativeBinomial(-0.9, 0.3), TruncatedNegativeBinomial(0.5, 0.01),
		TruncatedNegativeBinomial(10, 0.5), Poisson(1), Poisson(3), Poisson(100),
	}
	for _, c := range []struct {
		q, sigma float64
		steps    int
	}{{0.004, 0.8, 100}, {0.02, 1.1, 1000}, {1, 5, 10}, {0.001, 20, 1}} {
		curve, err := SampledGaussianCurve(c.q, c.sigma, c.steps, orders)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range dists {
			r, err := RDPFromCurve(orders, curve, d)
			if err != nil {
				t.Fatal(err)
			}
			for i := range r {
				if r[i] < curve[i] {
					t.Fatalf("%+v, %v, λ = %v: search RDP %v below one candidate's %v", c, d, orders[i], r[i], curve[i])
				}
				if i > 0 && r[i] < r[i-1] {
					t.Fatalf("%+v, %v: RDP decreases from λ = %v to %v", c, d, orders[i-1], orders[i])
				}
			}
			o, err := costFromOrders(orders, curve, d)
			if err != nil {
				t.Fatal(err)
			}
			if o.Extra < 0 {
				t.Errorf("%+v, %v: %v", c, d, o)
			}
		}
	}
}

// costFromOrders is Cost at δ = 1e-5 for a curve on orders.
func costFromOrders(orders, curve []float64, d Distribution) (Overhead, error) {
	return Cost(func(a float64) float64 { return curve[orderIndex(orders, a)] }, d, orders, 1e-5)
}

func TestOrdersInAnyOrder(t *testing.T) {
	sorted := []float64{1.5, 2, 3, 4, 8, 16, 32, 64}
	shuffled := []float64{16, 2, 64, 1.5, 8, 32, 4, 3}
	candidate := gaussian(0.02)
	for _, d := range []Distribution{Geometric(0.1), Poisson(10)} {
		a, err := RDP(candidate, d, sorted)
		if err != nil {
			t.Fatal(err)
		}
		b, err := RDP(candidate, d, shuffled)
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range shuffled {
			if want := a[orderIndex(sorted, o)]; b[i] != want {
				t.Errorf("%v, λ = %v: %v with shuffled orders, %v with sorted", d, o, b[i], want)
			}
		}
	}
}

func TestInfiniteOrdersAreSkipped(t *testing.T) {
	// +Inf at an order is no bound there: that order gives +Inf, or the envelope's value from a
	// higher order; it never serves as λ̂.
	orders := []float64{2, 4, 8, 16}
	curve := []float64{0.1, math.Inf(1), 0.4, math.Inf(1)}
	for _, d := range []Distribution{Geometric(0.1), Poisson(10)} {
		r, err := RDPFromCurve(orders, curve, d)
		if err != nil {
			t.Fatal(err)
		}
		if math.IsInf(r[0], 0) || math.IsInf(r[2], 0) || !math.IsInf(r[3], 1) || r[1] != r[2] {
			t.Errorf("%v: %v", d, r)
		}
	}
}

func TestRefusals(t *testing.T) {
	orders := []float64{2, 4, 8}
	ok := gaussian(0.01)
	tests := []struct {
		name      string
		candidate func(float64) float64
		dist      Distribution
		orders    []float64
		want      string
	}{
		{"nil candidate", nil, Geometric(0.1), orders, "no candidate RDP function"},
		{"no orders", ok, Geometric(0.1), nil, "no orders"},
		{"order 1", ok, Geometric(0.1), []float64{1, 2}, "order 1 is not a finite number above 1"},
		{"order NaN", ok, Poisson(2), []float64{math.NaN()}, "order NaN"},
		{"order +Inf", ok, Poisson(2), []float64{math.Inf(1)}, "order +Inf"},
		{"NaN RDP", func(float64) float64 { return math.NaN() }, Geometric(0.1), orders, "candidate RDP at order 2 is NaN"},
		{"negative RDP", func(float64) float64 { return -1 }, Poisson(2), orders, "candidate RDP at order 2 is -1"},
		{"−Inf RDP", func(float64) float64 { return math.Inf(-1) }, Poisson(2), orders, "is -Inf"},
		{"no finite RDP", func(float64) float64 { return math.Inf(1) }, Geometric(0.1), orders, "+Inf at every order"},
		{"γ", ok, Geometric(1.5), orders, "γ = 1.5"},
		{"η", ok, TruncatedNegativeBinomial(-1, 0.5), orders, "η = -1"},
		{"μ", ok, Poisson(0), orders, "μ = 0"},
		{"no distribution", ok, Distribution{}, orders, "no distribution"},
	}
	for _, tc := range tests {
		_, err := RDP(tc.candidate, tc.dist, tc.orders)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.want)
		}
		if _, err := Epsilon(tc.candidate, tc.dist, tc.orders, 1e-5); err == nil && tc.orders != nil {
			t.Errorf("%s: Epsilon accepted it", tc.name)
		}
	}
	if _, err := RDPFromCurve([]float64{2, 3}, []float64{1}, Poisson(1)); err == nil || !strings.Contains(err.Error(), "2 orders but 1") {
		t.Errorf("length mismatch: %v", err)
	}
}

// orderIndex is the index of a in orders, which holds it.
func orderIndex(orders []float64, a float64) int {
	for i, o := range orders {
		if o == a {
			return i
		}
	}
	panic("order not on the grid")
}
