package convergent

import (
	"math"
	"sync"
)

// smoothEngine evaluates the full-batch Theorem 3.1 bound at any horizon T, updated live step by step:
//
//	min( T·u² , min over τ ∈ [1, T−1] of V_{T−τ}(D_τ) )          (in units of α/(2σ²)),
//
// with V from the water-filling of shiftProblem and D_τ from the forward tracking. Cut times
// past the stored tracking prefix use the supremum of D_τ, and their values min_s V_s(sup) are
// kept as a prefix minimum over s, so a call costs O(pre-saturation window) plus amortised
// O(log s) per new horizon. It is safe for concurrent use; clones of an accountant share it.
type smoothEngine struct {
	sp shiftProblem
	tr track

	mu      sync.Mutex
	satMin  []float64 // satMin[s] = min_{1≤s'≤s} V_{s'}(sup); satMin[0] = +Inf
	satArg  []int
	satDone bool // s·u² ≥ satMin[s]: no larger s improves
}

func newSmoothEngine(u, delta float64, tr tracker) *smoothEngine {
	return &smoothEngine{sp: shiftProblem{u: u, delta: delta}, tr: newTrack(tr),
		satMin: []float64{math.Inf(1)}, satArg: []int{0}}
}

// satBest returns min over s ∈ [1, S] of V_s(sup) and its s.
func (e *smoothEngine) satBest(S int) (float64, int) {
	u2 := e.sp.u * e.sp.u
	for !e.satDone && len(e.satMin) <= S {
		s := len(e.satMin)
		v, _ := e.sp.value(s, e.tr.sup)
		prev, arg := e.satMin[s-1], e.satArg[s-1]
		if v < prev {
			prev, arg = v, s
		}
		e.satMin, e.satArg = append(e.satMin, prev), append(e.satArg, arg)
		if float64(s)*u2 >= prev {
			e.satDone = true
		}
	}
	i := min(S, len(e.satMin)-1)
	return e.satMin[i], e.satArg[i]
}

// bound returns the Theorem 3.1 minimum at horizon T in units of α/(2σ²), and the cut τ that
// attains it (0: composition).
func (e *smoothEngine) bound(T int) (float64, int) {
	u2 := e.sp.u * e.sp.u
	best, tau := float64(T)*u2, 0
	if T <= 1 {
		return best, tau
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	stored := len(e.tr.d)
	// Saturated cuts τ ∈ [stored, T−1], s = T − τ ∈ [1, T − stored], with A = sup ≥ D_τ.
	if S := T - stored; S >= 1 {
		skip := e.sp.delta > 0 && e.tr.sup*e.tr.sup*e.sp.delta*(2+e.sp.delta) >= best
		if !skip {
			if v, s := e.satBest(S); v < best {
				best, tau = v, T-s
			}
		}
	}
	// Stored cuts, latest first (smallest s).
	last := 1
	if e.sp.delta == 0 {
		// Convex, before the cap: D_t = u·t exactly (the recursion adds u while below D), so
		// V_s(D_t) = u²·T²/s ≥ u²·T: dominated by composition (the convex water-filling). Only the last
		// stored cut, where the cap may have been reached, can help.
		last = stored - 1
	}
	for t := min(stored-1, T-1); t >= max(last, 1); t-- {
		s := T - t
		if float64(s)*u2 >= best {
			break
		}
		A := e.tr.d[t]
		if e.sp.lowerBound(s, A) >= best {
			continue
		}
		if v, _ := e.sp.value(s, A); v < best {
			best, tau = v, t
		}
	}
	return best, tau
}
