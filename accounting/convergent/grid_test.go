package convergent

import (
	"math"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// TestHolderInverse checks h against Lemma 3.9's values (reading §3: L = 0.1, λ = 1/2:
// h(0.01) = 0.0038197, h(0.1) = 0.0729844, h(1) = 0.9048751), the bisection path against
// the closed form, and g(h(z)) ≤ z (rounded down).
func TestHolderInverse(t *testing.T) {
	g := growth{coef: 0.1, lambda: 0.5}
	for _, tt := range []struct{ z, want float64 }{{0.01, 0.0038197}, {0.1, 0.0729844}, {1, 0.9048751}} {
		if got := g.inverse(tt.z); math.Abs(got-tt.want) > 1e-7 {
			t.Errorf("h(%v) = %v, want %v", tt.z, got, tt.want)
		}
	}
	// A λ just off 1/2 goes through bisection and must agree with the closed form to ~1e-9.
	gb := growth{coef: 0.1, lambda: 0.5 + 1e-12}
	for _, z := range []float64{1e-6, 0.01, 0.3, 2, 50} {
		if a, b := g.inverse(z), gb.inverse(z); math.Abs(a-b) > 1e-9*(1+z) {
			t.Errorf("z = %v: closed form %v, bisection %v", z, a, b)
		}
	}
	// Appendix A.14: f′(x) = |x|^{1/3} is (2^{2/3}, 1/3)-Hölder; g with ηL = 0.1·2^{2/3}.
	for _, gg := range []growth{{0.1 * math.Pow(2, 2.0/3), 1.0 / 3}, {0.5, 1}, {-0.1, 1}, {0.3, 0.75}} {
		for _, z := range []float64{0, 1e-9, 0.05, 1, 7} {
			x := gg.inverse(z)
			if gx := gg.apply(x); gx > z || (z > 0 && gx < z*(1-1e-12)) {
				t.Errorf("g = %+v: g(h(%v)) = %v", gg, z, gx)
			}
		}
	}
}

// TestGridMatchesWaterFilling: for λ = 1 the grid dynamic program is a feasible relaxation of
// the water-filling, so it can only be above it, and close (reading §5.3: 0.548789 vs 0.548773
// at A = 1, s = 10, c = 1.1, M = 400 on [0, 1.6]).
func TestGridMatchesWaterFilling(t *testing.T) {
	for _, delta := range []float64{0.1, 0, -0.1} {
		u := 0.08
		e := newGrid(growth{coef: delta, lambda: 1}, 1, 400, func(a float64) float64 { return (u + a) * (u + a) })
		e.setTrack(track{d: []float64{0}, sup: 1})
		sp := shiftProblem{u: u, delta: delta}
		for _, s := range []int{1, 3, 10, 30} {
			e.extend(s)
			for _, A := range []float64{0.1, 0.5, 1} {
				want, _ := sp.value(s, A)
				got := e.row(s)[e.up(A)]
				if got < want*(1-1e-12) || got > want*1.05 {
					t.Errorf("c=%v s=%d A=%v: grid %v, water-filling %v", 1+delta, s, A, got, want)
				}
			}
		}
	}
}

// TestHolderTable checks Theorem 3.7 at T = 300 in the Figure-1 setting against the reading's
// table (§8.1, grid M = 320 on [0, 1.6]); the grids differ, so the tolerance is 0.5%. λ = 1 rows
// use the closed form.
func TestHolderTable(t *testing.T) {
	if testing.Short() {
		t.Skip("grid dynamic programs over 300 steps")
	}
	tests := []struct{ lambda, l, want float64 }{
		{1, 0.5, 0.2153}, {1, 1, 0.2732}, {1, 2, 0.3960}, {1, 5, 0.825},
		{0.75, 0.5, 0.2224}, {0.75, 1, 0.2870}, {0.75, 2, 0.4238},
		{0.5, 0.5, 0.2314}, {0.5, 1, 0.3053}, {0.5, 2, 0.4601}, {0.5, 5, 0.96},
		{0.25, 1, 0.3296}, {0.25, 2, 0.5070},
	}
	for _, tt := range tests {
		run := figure1Run(accounting.NonConvex)
		run.HolderExponent, run.Smoothness = tt.lambda, tt.l
		a, err := NewFullBatch(run, Options{})
		if err != nil {
			t.Fatal(err)
		}
		mustCompose(t, a, noisyStep(accounting.FullBatch, 1, 0.1, 5, 5, 300))
		got, tau := a.Rho()
		t.Logf("λ=%-4v L=%-3v want %.4f got %.4f (τ=%d)", tt.lambda, tt.l, tt.want, got, tau)
		if math.Abs(got-tt.want) > 0.005*tt.want {
			t.Errorf("λ=%v L=%v: ρ = %v, want %v", tt.lambda, tt.l, got, tt.want)
		}
	}
}
