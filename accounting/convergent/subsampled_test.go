package convergent

import (
	"math"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// subsampledRun is the reading's Theorem 3.12 example (§8.1): n = 20, b = 5, η = 0.1, K = 2,
// σ = 0.5, D = 1, L = 1, non-convex.
func subsampledRun() accounting.Run {
	r := figure1Run(accounting.NonConvex)
	r.DatasetSize = 20
	return r
}

func TestSGMValues(t *testing.T) {
	// Reading §8.1 / §5.5 (α = 2): per-step S at q = 0.25, s = 6.25 is 0.0015961 (Definition
	// 3.11) and 0.0016193 (standard direction); §5.5 table: q = 0.25, s = 0.5: 0.1575 vs 1.4701;
	// q = 0.1, s = 1: 0.01148 vs 0.01704.
	tests := []struct{ q, s, exact, standard float64 }{
		{0.25, 6.25, 0.0015961, 0.0016193},
		{0.25, 0.5, 0.1575, 1.4701},
		{0.1, 1, 0.01148, 0.01704},
	}
	for _, tt := range tests {
		ex, st := sgmExact(tt.q, tt.s, 2), sgmStandard(tt.q, tt.s, 2)
		t.Logf("q=%v s=%v: exact %.7g (want %v), standard %.7g (want %v)", tt.q, tt.s, ex, tt.exact, st, tt.standard)
		if math.Abs(ex-tt.exact) > 6e-4*tt.exact {
			t.Errorf("exact S_2(%v, %v) = %v, want %v", tt.q, tt.s, ex, tt.exact)
		}
		if math.Abs(st-tt.standard) > 6e-4*tt.standard {
			t.Errorf("standard S_2(%v, %v) = %v, want %v", tt.q, tt.s, st, tt.standard)
		}
		// Closed form at α = 2: log(1 + q²(e^{1/s²} − 1)).
		if cf := math.Log1p(tt.q * tt.q * math.Expm1(1/(tt.s*tt.s))); math.Abs(st-cf) > 1e-12*cf {
			t.Errorf("standard S_2 = %v, closed form %v", st, cf)
		}
	}
	// The standard direction dominates Definition 3.11 (reading §5.5) and both reduce to the
	// Gaussian α/(2s²) at q = 1.
	for _, alpha := range []int{2, 3, 5, 8, 16} {
		for _, q := range []float64{0.01, 0.1, 0.5} {
			for _, s := range []float64{0.7, 1, 2, 5} {
				if ex, st := sgmExact(q, s, float64(alpha)), sgmStandard(q, s, alpha); ex > st*(1+1e-9) {
					t.Errorf("α=%d q=%v s=%v: exact %v > standard %v", alpha, q, s, ex, st)
				}
			}
		}
		if g := sgmStandard(1, 2, alpha); math.Abs(g-float64(alpha)/8) > 1e-12 {
			t.Errorf("q = 1: %v, want α/(2s²) = %v", g, float64(alpha)/8)
		}
	}
}

// TestSubsampledExample checks the reading's Theorem 3.12 plateaus at α = 2 (§8.1; grid
// M = 240): √β with the standard S 1.1935, paper-literal β 1.5234, √β with the exact S 1.1842.
// The grid differs from the reading's ([0, g(D)] here, [0, 1.2] there), so the tolerance is
// 0.5%. The reading's values come from a grid program too, so they are upper bounds, not
// optima: the accountant, which uses the block solver for smooth losses, must not be above the
// grid and may be lower (by at most 3%).
func TestSubsampledExample(t *testing.T) {
	if testing.Short() {
		t.Skip("dynamic program over 1000 steps")
	}
	tests := []struct {
		name string
		opts Options
		want float64
		comp float64 // per-step composition
	}{
		{"sqrt-beta standard", Options{}, 1.1935, 0.0016193},
		{"paper-literal", Options{PaperLiteral: true}, 1.5234, 0.0016193},
		{"sqrt-beta exact", Options{ExactSGM: true}, 1.1842, 0.0015961},
	}
	for _, tt := range tests {
		tt.opts.Orders, tt.opts.GridSize = []int{2}, 240
		a, err := NewSubsampled(subsampledRun(), tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		mustCompose(t, a, noisyStep(accounting.WithoutReplacement, 0.5, 0.1, 5, 20, 10))
		early, _ := a.RDP(2)
		mustCompose(t, a, noisyStep(accounting.WithoutReplacement, 0.5, 0.1, 5, 20, 1990))
		got, _ := a.RDP(2)
		grid, _ := a.engines[0].bound(a.Steps())
		_, taus := a.RDPCurve()
		t.Logf("%s: T=10 %.6f (composition %.6f), T=2000 plateau: grid %.4f (want %.4f), with blocks %.4f (τ=%d)", tt.name, early, 10*tt.comp, grid, tt.want, got, taus[0])
		if math.Abs(early-10*tt.comp) > 2e-3*10*tt.comp {
			t.Errorf("%s: T = 10 gives %v, want composition %v", tt.name, early, 10*tt.comp)
		}
		if math.Abs(grid-tt.want) > 5e-3*tt.want {
			t.Errorf("%s: grid plateau %v, want %v", tt.name, grid, tt.want)
		}
		if got > grid*(1+1e-12) || got < 0.97*tt.want {
			t.Errorf("%s: plateau %v, want ≤ the grid's %v and ≥ 0.97 × %v", tt.name, got, grid, tt.want)
		}
	}
}
