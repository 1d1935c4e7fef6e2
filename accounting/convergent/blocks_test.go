package convergent

import (
	"math"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// TestBlockSolverMatchesWaterFilling checks the block solver against the exact water-filling
// of the full-batch problem (reading §5.2): with q = 1, φ(a) = (u + a)² in units of α/(2σ²), and
// windows of at most maxBlocks steps have one step per block, so the solver's value must be ≥ the
// exact optimum (it is a feasible allocation) and within the log-table's resolution of it.
func TestBlockSolverMatchesWaterFilling(t *testing.T) {
	const u = 0.08
	phi := func(a float64) float64 { return (u + a) * (u + a) }
	tests := []struct {
		name  string
		delta float64
		s     int
		A     float64
	}{
		{"non-convex c=1.1", 0.1, 4, 0.5},
		{"convex c=1", 0, 4, 0.5},
		{"strongly convex c=0.9", -0.1, 4, 0.5},
		{"strongly convex long", -0.05, 60, 1},
		{"non-convex long", 0.02, 50, 0.3},
	}
	for _, tt := range tests {
		b := newBlockSolver(phi, 3, tt.delta, track{d: []float64{0}, sup: tt.A})
		got, _ := b.value(tt.s, tt.A)
		want, _ := shiftProblem{u: u, delta: tt.delta}.value(tt.s, tt.A)
		t.Logf("%s: block %.7f, water-filling %.7f", tt.name, got, want)
		if got < want*(1-1e-9) {
			t.Errorf("%s: block solver %v beats the exact optimum %v: its allocation cannot be feasible", tt.name, got, want)
		}
		if got > want*1.01 {
			t.Errorf("%s: block solver %v is more than 1%% above the exact optimum %v", tt.name, got, want)
		}
	}
}

// strongRun is DP-SGLD's logistic regression on Fashion-MNIST (configs/fmnist-logreg-dpsgld.yaml):
// n = 60000, b = 256, η = 0.9, λ = 1e-3, σ = √(2η)·0.02, K = 2, β = 1.001.
func strongRun() (accounting.Run, accounting.Step) {
	run := accounting.Run{LastIterateOnly: true, UpdateRule: "sgd", DatasetSize: 60000, Convexity: accounting.StronglyConvex,
		Lipschitz: 2, Smoothness: 1.001, StrongConvexity: 1e-3, DomainDiameter: 135.72}
	return run, noisyStep(accounting.WithoutReplacement, math.Sqrt(2*0.9)*0.02, 0.9, 256, 60000, 1)
}

// TestBlockAllocationFeasible replays the solver's allocation step by step, independently of
// its algebra: A_τ = D_τ, A_{t+1} = c·A_t − a_t must reach ≤ 0 at T, and the charged cost must
// equal Σ φ_α(a_t) recomputed from the shifts.
func TestBlockAllocationFeasible(t *testing.T) {
	run, step := strongRun()
	a, err := NewSubsampled(run, Options{Orders: []int{4, 16}})
	if err != nil {
		t.Fatal(err)
	}
	step.Count = 20000
	mustCompose(t, a, step)
	p := *a.p
	c := 1 + p.delta()
	for i, o := range a.orders {
		b := a.blocks[i]
		phi := phiFunc(func(s float64) float64 { return sgmStandard(float64(p.b)/float64(p.n), s, o) }, p.sigma/p.u(), float64(o), p.sigma, false)
		for _, s := range []int{500, 3000, 8000, 15000} {
			A := b.tr.at(a.steps - s)
			v, shifts := b.value(s, A)
			if math.IsInf(v, 1) {
				continue
			}
			nb := len(shifts)
			x, cost, k0 := A, 0.0, 1
			for j := range nb {
				k1 := (j + 1) * s / nb
				for k := k0; k <= k1; k++ {
					x = c*x - shifts[j]
					cost += phi(shifts[j])
				}
				k0 = k1 + 1
			}
			if x > 1e-9*A {
				t.Errorf("order %d, s = %d: the allocation leaves A_T = %v > 0 (A_τ = %v): infeasible", o, s, x, A)
			}
			if math.Abs(cost-v) > 1e-9*v {
				t.Errorf("order %d, s = %d: charged %v, replayed cost %v", o, s, v, cost)
			}
		}
	}
}

// TestSubsampledStronglyConvexPlateau checks convergence where the theory says so: for a
// strongly convex loss the Theorem 3.12 bound stops growing once the window absorbs the tracked
// distance (here after ~10⁴ steps), while composition keeps growing.
func TestSubsampledStronglyConvexPlateau(t *testing.T) {
	run, step := strongRun()
	a, err := NewSubsampled(run, Options{})
	if err != nil {
		t.Fatal(err)
	}
	eps := func(T int) float64 {
		step.Count = T - a.Steps()
		mustCompose(t, a, step)
		g, err := a.Epsilon(1e-5)
		if err != nil {
			t.Fatal(err)
		}
		return g.Epsilon
	}
	e1, e30, e60 := eps(1000), eps(30000), eps(60000)
	comp := 60000 * a.blocks[0].perStep
	t.Logf("ε(1000) = %.6f, ε(30000) = %.6f, ε(60000) = %.6f", e1, e30, e60)
	if e60 != e30 {
		t.Errorf("no plateau: ε(30000) = %v, ε(60000) = %v", e30, e60)
	}
	if !(e1 < e30) {
		t.Errorf("ε(1000) = %v should be below the plateau %v", e1, e30)
	}
	rdp, taus := a.RDPCurve()
	if rdp[0] >= comp || taus[0] == 0 {
		t.Errorf("order %d: %v at τ = %d, composition %v: the hidden-state cut should win", a.orders[0], rdp[0], taus[0], comp)
	}
}
