package convergent

import (
	"math"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// TestCyclicOneBatchIsFullBatch: with b = n every epoch is one step, the differing example is
// in every batch, and the relaxed Theorem A.1 must coincide with Theorem 3.1.
func TestCyclicOneBatchIsFullBatch(t *testing.T) {
	for _, conv := range []accounting.Convexity{accounting.NonConvex, accounting.Convex, accounting.StronglyConvex} {
		for _, T := range []int{1, 10, 30, 86, 150} {
			fb, _ := NewFullBatch(figure1Run(conv), Options{})
			mustCompose(t, fb, noisyStep(accounting.FullBatch, 1, 0.1, 5, 5, T))
			cy, err := NewCyclic(figure1Run(conv))
			if err != nil {
				t.Fatal(err)
			}
			mustCompose(t, cy, noisyStep(accounting.Shuffled, 1, 0.1, 5, 5, T))
			want, _ := fb.Rho()
			got, _ := cy.Rho()
			if math.Abs(got-want) > 1e-9*want {
				t.Errorf("%s T=%d: cyclic with b = n gives %v, full batch %v", conv, T, got, want)
			}
		}
	}
}

// bruteCyclic evaluates Theorem A.1 (smooth, c = 1+delta) for one placement of the differing
// example by minimising, for each cut τ at an epoch boundary and the tracked worst-case
// distance, the exact per-step water-filling with weights: cost (u_b + a)² at i*-steps and a²
// elsewhere. It enumerates every placement (B^E) and returns the worst case: the quantity the
// accountant bounds from above.
func bruteCyclic(T, B int, ub, delta, diam float64) float64 {
	epochs := (T + B - 1) / B
	c := 1 + delta
	pos := make([]int, epochs)
	worst := 0.0
	var rec func(e int)
	rec = func(e int) {
		if e == epochs {
			isStar := make([]bool, T)
			for k, p := range pos {
				if t := k*B + p; t < T {
					isStar[t] = true
				}
			}
			// Exact Lemma A.2 tracking for this placement (conservative g(·; ηL) everywhere).
			D := make([]float64, T+1)
			for t := 1; t <= T; t++ {
				d := c * D[t-1]
				if isStar[t-1] {
					d += ub
				}
				D[t] = math.Min(d, diam)
			}
			best := 0.0
			for t := range T {
				if isStar[t] {
					best += ub * ub
				}
			}
			for tau := B; tau < T; tau += B {
				if v := weightedShift(isStar[tau:], ub, c, D[tau]); v < best {
					best = v
				}
			}
			worst = math.Max(worst, best)
			return
		}
		for p := range B {
			pos[e] = p
			rec(e + 1)
		}
	}
	rec(0)
	return worst
}

// weightedShift minimises Σ_k (u·1[star_k] + a_k)² s.t. Σ_k c^{−k}·a_k ≥ A, a ≥ 0, by bisection
// on the KKT multiplier: a_k = max(0, μ·c^{−k}/… ) with the per-step optimum
// a_k = max(0, μw_k − u·1[star_k]).
func weightedShift(star []bool, u, c, A float64) float64 {
	s := len(star)
	w := make([]float64, s)
	for k := range s {
		w[k] = math.Pow(c, -float64(k+1))
	}
	alloc := func(mu float64) (absorbed, cost float64) {
		for k := range s {
			uk := 0.0
			if star[k] {
				uk = u
			}
			a := math.Max(0, mu*w[k]-uk)
			absorbed += w[k] * a
			cost += (uk + a) * (uk + a)
		}
		return
	}
	lo, hi := 0.0, 1.0
	for {
		if ab, _ := alloc(hi); ab >= A {
			break
		}
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if ab, _ := alloc(mid); ab >= A {
			hi = mid
		} else {
			lo = mid
		}
	}
	_, cost := alloc(hi)
	return cost
}

// TestCyclicAboveWorstPlacement: the accountant's relaxation must never be below the exact
// worst case over placements of Theorem A.1 (restricted to the same cuts), and must not be far
// above it.
func TestCyclicAboveWorstPlacement(t *testing.T) {
	tests := []struct {
		B, T  int
		delta float64
	}{
		{2, 12, 0.1}, {3, 12, 0}, {3, 13, -0.1}, {2, 14, 0}, {4, 12, 0.05},
	}
	for _, tt := range tests {
		ub, diam := 0.3, 1.0
		got, _ := cyclicBound(tt.T, tt.B, ub, tt.delta, diam)
		want := bruteCyclic(tt.T, tt.B, ub, tt.delta, diam)
		t.Logf("B=%d T=%d c=%v: accountant %.5f, worst placement %.5f, composition %.5f", tt.B, tt.T, 1+tt.delta, got, want, float64((tt.T+tt.B-1)/tt.B)*ub*ub)
		if got < want*(1-1e-9) {
			t.Errorf("B=%d T=%d c=%v: bound %v below the worst placement %v", tt.B, tt.T, 1+tt.delta, got, want)
		}
	}
}
