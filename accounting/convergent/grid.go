package convergent

import (
	"math"
	"sync"
)

// ringRows is how many dynamic-programming rows a grid engine keeps for cut times before the
// tracked distance saturates; older rows are dropped and the cuts that need them skipped,
// which only loses tightness.
const ringRows = 512

// gridEngine evaluates the path form of Chien & Li's Theorems 3.7 and 3.12 on a grid
// 0 = x_0 < … < x_M ≥ D:
//
//	V_0(x_0) = 0, V_0(x_i) = +∞ (i > 0),
//	V_s(x_i) = min over x_j ≤ g(x_i) of cost(g(x_i) − x_j) + V_{s−1}(x_j),
//
// a path A_τ = x_i, A_{τ+1} = x_j, …, A_T = 0 with shifts a_t = g(A_t) − A_{t+1} ≥ 0, so that
// A_t = h(A_{t+1} + a_t) exactly: every grid path is feasible and every value a valid bound
// (g is rounded up, so the charged shift is never smaller than the true one). The bound at
// horizon T is min(T·cost(0), min over τ ≥ 1 of V_{T−τ}(gridUp(D_τ))).
type gridEngine struct {
	x    []float64
	lim  []int     // lim[i] = largest j with x_j ≤ g(x_i)
	cost []float64 // cost[i·(M+1)+j] for j ≤ lim[i]

	perStep float64 // cost(0): one step of plain composition
	// Lower bound on V_s(A): max(s·perStep, additive·s·perStep + kappa·A²/w2(s)), where
	// Σ_k c_lb^{−k} a_k ≥ A on every grid path and cost(a) ≥ perStep + kappa·a² (additive) or
	// cost(a) ≥ max(perStep, kappa·a²).
	kappa    float64
	additive bool
	lbShift  shiftProblem // its w2 gives Σ c_lb^{−2k}; delta ≤ 0 disables the A term

	tr     track
	idx    []int // idx[τ] = gridUp(D_τ) for stored τ
	satIdx int

	mu      sync.Mutex
	ring    [][]float64
	rows    int // rows 0..rows−1 computed
	satMin  []float64
	satArg  []int
	satDone bool
}

// newGrid builds the uniform grid on [0, max(D, g(D))] with m+1 points and the cost matrix.
// (Grids refined towards 0 for λ < 1 were measured looser on the Hölder test vectors.)
func newGrid(g growth, diam float64, m int, cost func(a float64) float64) *gridEngine {
	top := math.Max(diam, g.apply(diam))
	x := make([]float64, m+1)
	for i := range x {
		x[i] = top * float64(i) / float64(m)
	}
	x[m] = top
	e := &gridEngine{x: x, lim: make([]int, m+1), cost: make([]float64, (m+1)*(m+1))}
	for i, xi := range x {
		gx := g.apply(xi) * (1 + 1e-12)
		j := 0
		for j+1 <= m && x[j+1] <= gx {
			j++
		}
		e.lim[i] = j
		for jj := 0; jj <= j; jj++ {
			e.cost[i*(m+1)+jj] = cost(gx - x[jj])
		}
	}
	e.perStep = cost(0)
	return e
}

// up returns the index of the smallest grid point ≥ A (A ≤ x_M).
func (e *gridEngine) up(A float64) int {
	lo, hi := 0, len(e.x)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if e.x[mid] >= A {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// setTrack attaches the forward tracking and prepares the saturated index.
func (e *gridEngine) setTrack(tr track) {
	e.tr = tr
	e.idx = make([]int, len(tr.d))
	for t, d := range tr.d {
		e.idx[t] = e.up(d)
	}
	e.satIdx = e.up(tr.sup)
	row0 := make([]float64, len(e.x))
	for i := range row0 {
		row0[i] = math.Inf(1)
	}
	row0[0] = 0
	e.ring = make([][]float64, ringRows)
	e.ring[0] = row0
	e.rows = 1
	e.satMin, e.satArg = []float64{math.Inf(1)}, []int{0}
}

func (e *gridEngine) row(s int) []float64 {
	if s >= e.rows || e.rows-s > ringRows {
		return nil
	}
	return e.ring[s%ringRows]
}

// extend computes rows up to s, keeping the last ringRows of them.
func (e *gridEngine) extend(s int) {
	m1 := len(e.x)
	for e.rows <= s {
		prev := e.ring[(e.rows-1)%ringRows]
		next := e.ring[e.rows%ringRows]
		if next == nil {
			next = make([]float64, m1)
			e.ring[e.rows%ringRows] = next
		}
		for i := range m1 {
			best := math.Inf(1)
			c := e.cost[i*m1 : i*m1+e.lim[i]+1]
			for j, cj := range c {
				if v := cj + prev[j]; v < best {
					best = v
				}
			}
			next[i] = best
		}
		s := e.rows
		e.rows++
		v := next[e.satIdx]
		pm, arg := e.satMin[s-1], e.satArg[s-1]
		if v < pm {
			pm, arg = v, s
		}
		e.satMin, e.satArg = append(e.satMin, pm), append(e.satArg, arg)
		if float64(s)*e.perStep >= pm {
			e.satDone = true
		}
	}
}

func (e *gridEngine) lowerBound(s int, A float64) float64 {
	base := float64(s) * e.perStep
	if e.lbShift.delta < 0 || e.kappa == 0 {
		return base
	}
	shift := e.kappa * A * A / e.lbShift.w2(s)
	if e.additive {
		return base + shift
	}
	return math.Max(base, shift)
}

// bound returns the minimum at horizon T (in the cost's units) and the cut τ attaining it.
func (e *gridEngine) bound(T int) (float64, int) {
	best, tau := float64(T)*e.perStep, 0
	if T <= 1 {
		return best, tau
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	stored := len(e.tr.d)
	if S := T - stored; S >= 1 {
		skip := false
		if e.lbShift.delta > 0 && e.kappa > 0 {
			// Σ c^{−2k} < 1/(c²−1) for every s.
			skip = e.kappa*e.tr.sup*e.tr.sup*e.lbShift.delta*(2+e.lbShift.delta) >= best
		}
		if !skip {
			for !e.satDone && e.rows <= S && float64(e.rows)*e.perStep < best {
				e.extend(e.rows)
			}
			i := min(S, e.rows-1)
			if v, s := e.satMin[i], e.satArg[i]; v < best {
				best, tau = v, T-s
			}
		}
	}
	for t := min(stored-1, T-1); t >= 1; t-- {
		s := T - t
		if float64(s)*e.perStep >= best {
			break
		}
		if e.lowerBound(s, e.tr.d[t]) >= best {
			continue
		}
		e.extend(s)
		r := e.row(s)
		if r == nil {
			break // older rows are gone; larger s only get older
		}
		if v := r[e.idx[t]]; v < best {
			best, tau = v, t
		}
	}
	return best, tau
}
