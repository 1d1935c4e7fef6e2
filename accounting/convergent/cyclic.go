package convergent

import (
	"fmt"
	"math"
	"slices"

	"github.com/dptrain/dptrain/accounting"
)

// Cyclic is the hidden-state accountant of Theorem A.1 for shuffled cyclic batches: each
// epoch visits the B = n/b batches of a partition of the data (drawn afresh every epoch, or
// once), so the differing example i* is used exactly once per epoch, at a step t_e the
// accountant does not know. The reported bound holds for every placement of those steps
// (data-independent), for L-smooth losses (λ = 1).
//
// With the noise split eliminated (min over β of u²/β + a²/(1−β) = (u+a)²), Theorem A.1 for a given placement is
//
//	ε(α, 𝔅)·2σ²/α = min over τ, a of Σ_{t≥τ, t=t_e} (u_b + a_t)² + Σ_{t≥τ, t≠t_e} a_t²,
//	s.t. Σ_{t=τ}^{T−1} c^{−(t−τ+1)}·a_t ≥ D_τ,    u_b = 2ηK/b.
//
// The accountant bounds sup over placements with three valid relaxations: (1) the cut τ is an
// epoch boundary e₀·B and D_τ is the worst case over placements of the Lemma A.2 recursion,
// D_{e+1} = min(c^B·D_e + u_b·max(1, c^{B−1}), D); (2) the shifts do not depend on the
// placement (sup min ≤ min sup) and are constant within an epoch, x_e; then the adversary's
// best placement costs B_e·x_e² + 2u_b·x_e + u_b² per epoch of B_e steps; (3) the resulting
// problem, min Σ_e B_e·y_e² s.t. Σ_e Ω_e·y_e ≥ D_τ + Σ_e Ω_e·ℓ_e, y_e = x_e + ℓ_e ≥ ℓ_e = u_b/B_e,
// Ω_e = Σ_{t∈e} c^{−(t−τ+1)}, is a water-filling solved exactly. τ = 0 gives the composition
// bound, one u_b² per epoch started (the τ = 0 case of Chien & Li's Theorem A.1). With B = 1 it is Theorem 3.1.
//
// Corollary A.3 (averaging over the shuffle) is not implemented: Chien & Li (Section 5) note it
// cannot be computed in a numerically stable way.
//
// Label: accounting.Certified.
type Cyclic struct {
	run   accounting.Run
	p     *params
	steps int
}

// NewCyclic returns a Theorem A.1 accountant for run, or an error naming the assumption the run
// does not declare.
func NewCyclic(run accounting.Run) (*Cyclic, error) {
	if err := checkRun(run, true); err != nil {
		return nil, fmt.Errorf("chien-li cyclic: %w", err)
	}
	if holderExponent(run) != 1 {
		return nil, fmt.Errorf("chien-li cyclic: Hölder exponent %v: the cyclic bound is implemented for L-smooth losses (λ = 1) only; sample batches without replacement (Theorem 3.12) for Hölder gradients", run.HolderExponent)
	}
	return &Cyclic{run: run}, nil
}

// Name implements accounting.Accountant.
func (a *Cyclic) Name() string { return "chien-li-cyclic" }

// Label implements accounting.Accountant.
func (a *Cyclic) Label() accounting.Label { return accounting.Certified }

// Clone implements accounting.Accountant.
func (a *Cyclic) Clone() accounting.Accountant {
	c := *a
	return &c
}

// Compose implements accounting.Accountant.
func (a *Cyclic) Compose(s accounting.Step) error {
	p, err := stepParams(a.run, cyclic, s, a.p)
	if err != nil {
		return fmt.Errorf("chien-li cyclic: %w", err)
	}
	if per := p.n / p.b; s.Sampling == accounting.ShuffledOnce && s.BatchIndex != a.steps%per {
		return fmt.Errorf("chien-li cyclic: step %d declares batch index %d, want %d (= step mod %d batches per epoch): the fixed partition must be visited cyclically", a.steps, s.BatchIndex, a.steps%per, per)
	}
	if a.p == nil {
		a.p = &p
	}
	a.steps += s.Steps()
	return nil
}

// Steps returns the number of steps composed.
func (a *Cyclic) Steps() int { return a.steps }

// Rho returns ε(α)/α, rounded up, and the cut τ of the bound (0: composition).
func (a *Cyclic) Rho() (float64, int) {
	if a.p == nil || a.steps == 0 {
		return 0, 0
	}
	v, tau := cyclicBound(a.steps, a.p.n/a.p.b, a.p.u(), a.p.delta(), a.p.d)
	return roundUp(v / (2 * a.p.sigma * a.p.sigma)), tau
}

// RDP returns ε(α) = ρ·α.
func (a *Cyclic) RDP(alpha float64) (float64, error) {
	if !(alpha > 1) || math.IsInf(alpha, 1) {
		return 0, fmt.Errorf("chien-li cyclic: order %v: want a finite α > 1", alpha)
	}
	rho, _ := a.Rho()
	return roundUp(rho * alpha), nil
}

// Epsilon implements accounting.Accountant.
func (a *Cyclic) Epsilon(delta float64) (accounting.Guarantee, error) {
	return linearGuarantee(a.Name(), a.Label(), a.Rho, delta)
}

// Constants returns every number the bound used, keyed by name.
func (a *Cyclic) Constants() map[string]float64 {
	if a.p == nil {
		return map[string]float64{"n": float64(a.run.DatasetSize), "diameter": a.run.DomainDiameter, "steps": 0}
	}
	c := a.p.constants(a.steps)
	B := a.p.n / a.p.b
	c["batches_per_epoch"] = float64(B)
	c["epochs_started"] = float64((a.steps + B - 1) / B)
	rho, tau := a.Rho()
	c["rho"], c["cut_tau"] = rho, float64(tau)
	c["rho_composition"] = roundUp(c["epochs_started"] * a.p.u() * a.p.u() / (2 * a.p.sigma * a.p.sigma))
	return c
}

// logSumPow returns log Σ_{i=1}^{m} c^{−i} for c = 1 + delta.
func logSumPow(m int, delta float64) float64 {
	fm := float64(m)
	if delta == 0 {
		return math.Log(fm)
	}
	lc := math.Log1p(delta)
	if delta > 0 {
		return math.Log(-math.Expm1(-fm*lc)) - math.Log(delta)
	}
	// c < 1: (c^{−m} − 1)/(1 − c); log(e^x − 1) = x + log(1 − e^{−x}) with x = −m·log c > 0.
	x := -fm * lc
	return x + math.Log(-math.Expm1(-x)) - math.Log(-delta)
}

// cyclicBound returns the relaxed Theorem A.1 minimum at horizon T (units α/(2σ²)) for B
// batches per epoch, and the cut attaining it.
func cyclicBound(T, B int, ub, delta, diam float64) (float64, int) {
	epochs := (T + B - 1) / B
	u2 := ub * ub
	best, tau := float64(epochs)*u2, 0
	c := 1 + delta
	// Worst-case distance at epoch boundaries.
	grow := ub * math.Max(1, math.Pow(c, float64(B-1)))
	cB := math.Pow(c, float64(B))
	dist := make([]float64, epochs)
	for e := 1; e < epochs; e++ {
		dist[e] = math.Min(cB*dist[e-1]+grow, diam)
	}
	sp := shiftProblem{u: ub, delta: delta}
	for e0 := epochs - 1; e0 >= 1; e0-- {
		k := epochs - e0
		if float64(k)*u2 >= best {
			break
		}
		A := dist[e0]
		// Lower bound: each epoch costs ≥ u_b²(1 − 1/B_e) + its part of Σ B_e·y_e², and
		// Σ B_e·y_e² ≥ A²/Σ_t c^{−2(t−τ+1)} (Cauchy–Schwarz, Ω_e² ≤ B_e·Σ_{t∈e} c^{−2(t−τ+1)}).
		if lb := float64(k-1)*u2*(1-1/float64(B)) + A*A/sp.w2(T-e0*B); lb >= best {
			continue
		}
		if v := cyclicCut(T, B, e0, A, ub, delta); v < best {
			best, tau = v, e0*B
		}
	}
	return best, tau
}

// cyclicCut solves the per-epoch water-filling for the cut τ = e0·B.
func cyclicCut(T, B, e0 int, A, ub, delta float64) float64 {
	epochs := (T + B - 1) / B
	type block struct{ size, logOmega float64 }
	blocks := make([]block, 0, epochs-e0)
	lc := math.Log1p(delta)
	maxLog := math.Inf(-1)
	for e := e0; e < epochs; e++ {
		size := min(B, T-e*B)
		off := float64((e - e0) * B)
		lo := -off*lc + logSumPow(size, delta)
		blocks = append(blocks, block{float64(size), lo})
		maxLog = math.Max(maxLog, lo)
	}
	// Normalise Ω by its largest value; the optimum is scale-free once A is scaled alike.
	omega := make([]float64, len(blocks))
	for i, b := range blocks {
		omega[i] = math.Exp(b.logOmega - maxLog)
	}
	a := A * math.Exp(-maxLog)
	order := make([]int, len(blocks))
	for i := range order {
		order[i] = i
	}
	// Active epochs are those with the largest Ω (breakpoint u_b/Ω).
	slices.SortFunc(order, func(i, j int) int {
		switch {
		case omega[i] > omega[j]:
			return -1
		case omega[i] < omega[j]:
			return 1
		}
		return 0
	})
	base := 0.0 // Σ_e u_b²(1 − 1/B_e): the adversary's composition, net of B_e·ℓ_e²
	for _, b := range blocks {
		base += ub * ub * (1 - 1/b.size)
	}
	// Active set = first j in this order: ν = (a + Σ_act Ω_e·ℓ_e)/Σ_act Ω_e²/B_e, feasible iff
	// ν·Ω_j ≥ u_b for the last active j; value Σ_act ν²Ω_e²/B_e + Σ_inact u_b²/B_e + base.
	num, den := a, 0.0
	restInactive := 0.0
	for _, b := range blocks {
		restInactive += ub * ub / b.size
	}
	bestVal := math.Inf(1)
	for j, i := range order {
		b := blocks[i]
		num += omega[i] * ub / b.size
		den += omega[i] * omega[i] / b.size
		restInactive -= ub * ub / b.size
		nu := num / den
		if nu*omega[i] < ub && j > 0 {
			break
		}
		bestVal = math.Min(bestVal, nu*nu*den+math.Max(restInactive, 0)+base)
	}
	return bestVal
}
