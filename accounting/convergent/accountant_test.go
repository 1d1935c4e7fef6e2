package convergent

import (
	"math"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

var (
	_ accounting.Accountant = (*FullBatch)(nil)
	_ accounting.Accountant = (*Subsampled)(nil)
	_ accounting.Accountant = (*Cyclic)(nil)
	_ accounting.Accountant = (*OutputPerturbation)(nil)
	_ accounting.Accountant = (*ChienLi)(nil)
)

// rhoer is what the linear-in-α accountants share.
type rhoer interface {
	accounting.Accountant
	Rho() (float64, int)
}

// TestProperties: never above standard composition (full batch α·T·u²/(2σ²), cyclic one u_b² per
// epoch, computed here directly), non-decreasing in T (cyclic: at epoch ends), non-increasing in σ, and flat after
// the burn-in (convergence).
func TestProperties(t *testing.T) {
	type build func(conv accounting.Convexity) (rhoer, accounting.Sampling, int, func(T int) float64)
	builders := map[string]build{
		"full-batch": func(conv accounting.Convexity) (rhoer, accounting.Sampling, int, func(int) float64) {
			a, _ := NewFullBatch(figure1Run(conv), Options{})
			return a, accounting.FullBatch, 5, func(T int) float64 { return float64(T) * 0.08 * 0.08 / 2 }
		},
		"cyclic": func(conv accounting.Convexity) (rhoer, accounting.Sampling, int, func(int) float64) {
			r := figure1Run(conv)
			r.DatasetSize = 20
			a, _ := NewCyclic(r)
			return a, accounting.Shuffled, 5, func(T int) float64 { return float64((T+3)/4) * 0.08 * 0.08 / 2 }
		},
	}
	for name, b := range builders {
		for _, conv := range []accounting.Convexity{accounting.NonConvex, accounting.Convex, accounting.StronglyConvex} {
			prev := 0.0
			var a rhoer
			var samp accounting.Sampling
			var bs int
			var comp func(int) float64
			a, samp, bs, comp = b(conv)
			n := 5
			if name == "cyclic" {
				n = 20
			}
			for T := 1; T <= 600; T++ {
				mustCompose(t, a, noisyStep(samp, 1, 0.1, bs, n, 1))
				rho, _ := a.Rho()
				if rho > comp(T)*(1+1e-9) {
					t.Fatalf("%s %s T=%d: ρ = %v above composition %v", name, conv, T, rho, comp(T))
				}
				// The cyclic relaxation charges a started epoch in full, so it is monotone
				// from epoch end to epoch end only.
				if name == "cyclic" && T%4 != 0 {
					continue
				}
				if rho < prev*(1-1e-12) {
					t.Fatalf("%s %s T=%d: ρ decreased from %v to %v", name, conv, T, prev, rho)
				}
				if T > 500 && rho != prev {
					t.Errorf("%s %s T=%d: ρ still moving (%v → %v) after the burn-in", name, conv, T, prev, rho)
				}
				prev = rho
			}
			if prev >= comp(600) {
				t.Errorf("%s %s: no hidden-state gain at T = 600 (ρ = %v)", name, conv, prev)
			}
			// Monotone in σ.
			last := math.Inf(1)
			for _, sigma := range []float64{0.5, 1, 2, 4} {
				a, samp, bs, _ = b(conv)
				mustCompose(t, a, noisyStep(samp, sigma, 0.1, bs, n, 200))
				rho, _ := a.Rho()
				if rho > last {
					t.Errorf("%s %s: ρ rose from %v to %v when σ grew to %v", name, conv, last, rho, sigma)
				}
				last = rho
			}
		}
	}
}

// TestSubsampledProperties: at every order, never above T·S_α(q, σ/u_b) computed directly, and
// non-decreasing in T.
func TestSubsampledProperties(t *testing.T) {
	a, err := NewSubsampled(subsampledRun(), Options{Orders: []int{2, 8}, GridSize: 120})
	if err != nil {
		t.Fatal(err)
	}
	prev := []float64{0, 0}
	for T := 1; T <= 300; T++ {
		mustCompose(t, a, noisyStep(accounting.WithoutReplacement, 0.5, 0.1, 5, 20, 1))
		rdp, _ := a.RDPCurve()
		for i, o := range []int{2, 8} {
			comp := float64(T) * sgmStandard(0.25, 6.25, o)
			if rdp[i] > comp*(1+1e-9) {
				t.Fatalf("T=%d α=%d: %v above composition %v", T, o, rdp[i], comp)
			}
			if rdp[i] < prev[i] {
				t.Fatalf("T=%d α=%d: decreased from %v to %v", T, o, prev[i], rdp[i])
			}
		}
		copy(prev, rdp)
	}
}

// TestLinearConversion checks the reading's §6.4 values (δ = 1e-5, improved conversion):
// ρ = 0.0667 → 1.532, 0.16 → 2.484, 0.2732 → 3.352, 0.5 → 4.728.
func TestLinearConversion(t *testing.T) {
	for _, tt := range []struct{ rho, want float64 }{{0.0667, 1.532}, {0.16, 2.484}, {0.2732, 3.352}, {0.5, 4.728}} {
		eps, order, err := linearToEpsilon(tt.rho, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		// Independent: the formula at the returned order.
		direct := tt.rho*order + math.Log1p(-1/order) - (math.Log(1e-5)+math.Log(order))/(order-1)
		if eps < direct || math.Abs(eps-tt.want) > 1.5e-3 {
			t.Errorf("ρ = %v: ε = %v at α = %v (formula %v), want %v", tt.rho, eps, order, direct, tt.want)
		}
	}
}

// TestOutputPerturbation: Figure 1's line α·D²/(2σ²) = 0.5·α (paper) and the corrected
// sensitivity (c·D + u)² / 2 = (1.1 + 0.08)²/2 (non-convex), (1 + 0.08)²/2 (convex).
func TestOutputPerturbation(t *testing.T) {
	for _, tt := range []struct {
		conv  accounting.Convexity
		paper bool
		want  float64
	}{
		{accounting.NonConvex, true, 0.5},
		{accounting.NonConvex, false, 1.18 * 1.18 / 2},
		{accounting.Convex, false, 1.08 * 1.08 / 2},
		{accounting.StronglyConvex, false, 0.98 * 0.98 / 2},
	} {
		a, err := NewOutputPerturbation(figure1Run(tt.conv), tt.paper)
		if err != nil {
			t.Fatal(err)
		}
		mustCompose(t, a, noisyStep(accounting.FullBatch, 1, 0.1, 5, 5, 50))
		got, _ := a.Rho()
		if math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s paper=%v: ρ = %v, want %v", tt.conv, tt.paper, got, tt.want)
		}
		wantLabel := accounting.Certified
		if tt.paper {
			wantLabel = accounting.Paper
		}
		if a.Label() != wantLabel {
			t.Errorf("label %v, want %v", a.Label(), wantLabel)
		}
	}
}

// TestChienLiDispatch: the mode picks the theorem from the first step and refuses Poisson.
func TestChienLiDispatch(t *testing.T) {
	run := figure1Run(accounting.Convex)
	run.DatasetSize = 20
	for _, tt := range []struct {
		sampling accounting.Sampling
		b        int
		theorem  string
		label    accounting.Label
	}{
		{accounting.FullBatch, 20, "chien-li-full-batch", accounting.Certified},
		{accounting.WithoutReplacement, 5, "chien-li-subsampled", accounting.Paper},
		{accounting.Shuffled, 5, "chien-li-cyclic", accounting.Certified},
	} {
		a, err := NewWith(run, Options{Orders: []int{2, 4}, GridSize: 60})
		if err != nil {
			t.Fatal(err)
		}
		mustCompose(t, a, noisyStep(tt.sampling, 1, 0.1, tt.b, 20, 30))
		if a.Theorem() != tt.theorem || a.Label() != tt.label {
			t.Errorf("%s: chose %s (%s), want %s (%s)", tt.sampling, a.Theorem(), a.Label(), tt.theorem, tt.label)
		}
		g, err := a.Epsilon(1e-5)
		if err != nil || !(g.Epsilon > 0) || math.IsInf(g.Epsilon, 0) || g.Accountant != "chien-li" {
			t.Errorf("%s: guarantee %+v, %v", tt.sampling, g, err)
		}
		if c := a.Constants(); c["steps"] != 30 || c["n"] != 20 {
			t.Errorf("%s: constants %v", tt.sampling, c)
		}
	}
	a, _ := New(run)
	s := noisyStep(accounting.Poisson, 1, 0.1, 5, 20, 1)
	if err := a.Compose(s); err == nil || !strings.Contains(err.Error(), "Poisson") && !strings.Contains(err.Error(), "poisson") {
		t.Errorf("Poisson accepted or unclear error: %v", err)
	}
}

// TestClone: a clone composes independently of its original.
func TestClone(t *testing.T) {
	a, _ := NewFullBatch(figure1Run(accounting.NonConvex), Options{})
	mustCompose(t, a, noisyStep(accounting.FullBatch, 1, 0.1, 5, 5, 10))
	c := a.Clone()
	mustCompose(t, c, noisyStep(accounting.FullBatch, 1, 0.1, 5, 5, 90))
	ra, _ := a.Rho()
	rc, _ := c.(*FullBatch).Rho()
	if math.Abs(ra-0.032) > 1e-9 || math.Abs(rc-0.273172) > 1e-6 {
		t.Errorf("original ρ %v (want 0.032), clone ρ %v (want 0.273172)", ra, rc)
	}
}
