package convergent

import "math"

// shiftProblem is the inner problem of Theorem 3.1 after the per-step noise split is
// eliminated (Chien & Li Eq. 11; min over β of u²/β + a²/(1−β) = (u+a)², at β = u/(u+a)):
//
//	V_s(A) = min over a_1..a_s ≥ 0 of Σ_{k=1}^{s} (u + a_k)²   s.t.  Σ_{k=1}^{s} c^{−k}·a_k ≥ A,
//
// where k = t − τ + 1 counts the steps after the cut τ and c = 1 + delta is the Lipschitz
// constant of the gradient map (Lemma 3.4). The constraint is eq. (11): the shifts, carried back
// through the c-Lipschitz maps (Lemma 3.3), must absorb the tracked distance A = D_τ.
type shiftProblem struct {
	u, delta float64
}

// KKT (the exact solution of Eq. 12's allocation under a_k ≥ 0): a_k = max(0, μ·c^{−k} − u) for the μ that meets the constraint. The
// active steps are the first ones when c > 1 and the last ones when c < 1; for an active block
// of j steps, μ and the value follow from Cauchy–Schwarz, and the block is feasible (all its
// shifts ≥ 0) exactly when its least-weighted shift is ≥ 0. Feasibility is prefix-closed in j
// and the optimum is the largest feasible block (a block one longer is feasible iff the next
// step would take a positive shift at the current μ), so a binary search finds it.

// logc returns log c, accurate for c near 1.
func (sp shiftProblem) logc() float64 { return math.Log1p(sp.delta) }

// block returns, for c ≠ 1, the value of an active block of j steps within s steps and whether
// all its shifts are non-negative. For c > 1 the block is steps 1..j; for c < 1 it is steps
// s−j+1..s. The sums are scaled so that nothing overflows.
func (sp shiftProblem) block(s, j int, A float64) (value float64, feasible bool) {
	u, lc := sp.u, sp.logc()
	fj := float64(j)
	if sp.delta > 0 {
		// W1 = Σ_{k≤j} c^{−k} = (1 − c^{−j})/(c − 1), W2 = Σ c^{−2k} = (1 − c^{−2j})/(c² − 1).
		w1 := -math.Expm1(-fj*lc) / sp.delta
		w2 := -math.Expm1(-2*fj*lc) / (sp.delta * (2 + sp.delta))
		num := A + u*w1
		mu := num / w2
		// Least-weighted active shift: μ·c^{−j} − u.
		feasible = mu*math.Exp(-fj*lc) >= u
		return num*num/w2 + float64(s-j)*u*u, feasible
	}
	// c < 1: multiply the constraint by c^{s}: Σ_{i=1}^{j} c^{j−i} terms.
	// Q1 = A·c^{s} + u·(1 − c^{j})/(1 − c), R2 = (1 − c^{2j})/(1 − c²).
	om := -sp.delta // 1 − c
	q1 := A*math.Exp(float64(s)*lc) + u*(-math.Expm1(fj*lc))/om
	r2 := -math.Expm1(2*fj*lc) / (om * (2 - om))
	// Least-weighted active shift is the first of the block: (Q1/R2)·c^{j−1} − u.
	feasible = q1/r2*math.Exp((fj-1)*lc) >= u
	return q1*q1/r2 + float64(s-j)*u*u, feasible
}

// value returns V_s(A) and the number of active (shifted) steps.
func (sp shiftProblem) value(s int, A float64) (float64, int) {
	u := sp.u
	if s <= 0 {
		if A > 0 {
			return math.Inf(1), 0
		}
		return 0, 0
	}
	if A <= 0 {
		return float64(s) * u * u, 0
	}
	if sp.delta == 0 {
		// Convex: every step shifts A/s; V = (A + u·s)²/s.
		v := A + u*float64(s)
		return v * v / float64(s), s
	}
	// j = 1 is always feasible; find the largest feasible j in [1, s].
	lo, hi := 1, s
	if _, ok := sp.block(s, hi, A); ok {
		lo = hi
	}
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if _, ok := sp.block(s, mid, A); ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	v, _ := sp.block(s, lo, A)
	return v, lo
}

// lowerBound returns a lower bound on V_s(A) that costs O(1): (u+a)² ≥ u² + a² and
// Σ a_k² ≥ A²/Σ c^{−2k} (Cauchy–Schwarz).
func (sp shiftProblem) lowerBound(s int, A float64) float64 {
	return float64(s)*sp.u*sp.u + A*A/sp.w2(s)
}

// w2 returns Σ_{k=1}^{s} c^{−2k} (+Inf on overflow, which makes the bound above weaker, not
// wrong).
func (sp shiftProblem) w2(s int) float64 {
	fs := float64(s)
	switch {
	case sp.delta == 0:
		return fs
	case sp.delta > 0:
		return -math.Expm1(-2*fs*sp.logc()) / (sp.delta * (2 + sp.delta))
	}
	om := -sp.delta
	return math.Expm1(-2*fs*sp.logc()) / (om * (2 - om))
}

// allocation returns the optimal shifts a_1..a_s and noise splits β_k = u/(u + a_k) for
// V_s(A): a certificate that an independent verifier can check.
func (sp shiftProblem) allocation(s int, A float64) (shifts, betas []float64) {
	shifts, betas = make([]float64, s), make([]float64, s)
	_, j := sp.value(s, A)
	u, lc := sp.u, sp.logc()
	switch {
	case A <= 0 || j == 0:
	case sp.delta == 0:
		for k := range shifts {
			shifts[k] = A / float64(s)
		}
	case sp.delta > 0:
		fj := float64(j)
		w1 := -math.Expm1(-fj*lc) / sp.delta
		w2 := -math.Expm1(-2*fj*lc) / (sp.delta * (2 + sp.delta))
		mu := (A + u*w1) / w2
		for k := 1; k <= j; k++ {
			shifts[k-1] = math.Max(0, mu*math.Exp(-float64(k)*lc)-u)
		}
	default:
		om, fj := -sp.delta, float64(j)
		q1 := A*math.Exp(float64(s)*lc) + u*(-math.Expm1(fj*lc))/om
		r2 := -math.Expm1(2*fj*lc) / (om * (2 - om))
		for k := s - j + 1; k <= s; k++ {
			// μ·c^{−k} = (Q1/R2)·c^{s−k}.
			shifts[k-1] = math.Max(0, q1/r2*math.Exp(float64(s-k)*lc)-u)
		}
	}
	for k, a := range shifts {
		betas[k] = u / (u + a)
	}
	return shifts, betas
}
