package convergent

import (
	"math"
	"sort"
)

// maxBlocks is how many blocks of equal shift the block solver splits a window into.
const maxBlocks = 64

// blockDecades and blockPerDecade set the block solver's φ table: 0 and then log-spaced shifts
// from aMax·10^−blockDecades to aMax. Optimal shifts in a long window are tiny, far below the
// uniform table's spacing.
const (
	blockDecades   = 14
	blockPerDecade = 100
)

// blockSolver evaluates Theorem 3.12's smooth specialisation (which Chien & Li leave as an exercise: h(z) = z/c) by a
// Lagrangian allocation instead of the grid. With λ = 1 the path constraint is linear: unrolling
// A_{t+1} = c·A_t − a_t from A_τ = D_τ to A_T = 0 gives
//
//	Σ_{k=1}^{s} c^{−k}·a_k = D_τ,    s = T − τ, k = t − τ + 1,
//
// so a window of s steps costs V_s(A) = min Σ_k φ_α(a_k) subject to Σ_k c^{−k}·a_k ≥ A (an
// overshoot is never needed: cutting the shifts back to meet the constraint exactly, earliest
// first, keeps every A_t ≥ 0 and only lowers the cost, φ_α being non-decreasing).
//
// The grid engine has to descend at least one grid cell per step, which for a slow contraction
// (strongly convex, c = 1 − ηm close to 1) charges a shift every step and never reaches the
// plateau. Here the window is cut into at most maxBlocks runs of consecutive steps sharing one
// shift, and the shifts are the minimisers of φ_α(a) − μ·w·a on the lower convex hull of the φ_α
// table (log-spaced in a), with μ found by bisection so the constraint holds. Every allocation
// it returns is feasible and charged at φ_α's values at table points (upper bounds), so every
// value is a valid bound; the blocks, the table and the hull only cost tightness.
type blockSolver struct {
	logc    float64   // log c
	xs      []float64 // table shifts, increasing, xs[0] = 0
	vals    []float64 // φ_α(xs[k])
	hull    []int     // indices of the lower convex hull of (xs[k], vals[k])
	slopes  []float64 // slopes[i] = slope from hull[i] to hull[i+1]
	perStep float64   // φ_α(0)
	tr      track
}

func newBlockSolver(phi func(a float64) float64, aMax, delta float64, tr track) *blockSolver {
	n := blockDecades * blockPerDecade
	b := &blockSolver{logc: math.Log1p(delta), xs: make([]float64, n+2), vals: make([]float64, n+2), tr: tr}
	for k := 1; k <= n+1; k++ {
		b.xs[k] = aMax * math.Pow(10, -float64(n+1-k)/blockPerDecade)
	}
	for k, x := range b.xs {
		b.vals[k] = phi(x)
	}
	b.perStep = b.vals[0]
	// Lower convex hull (Andrew's monotone chain, lower part) of the finite table points.
	for k, v := range b.vals {
		if math.IsInf(v, 0) || math.IsNaN(v) {
			break
		}
		for len(b.hull) >= 2 {
			i, j := b.hull[len(b.hull)-2], b.hull[len(b.hull)-1]
			// Drop j when it lies on or above the segment from i to k.
			if (b.vals[j]-b.vals[i])*(b.xs[k]-b.xs[i]) >= (v-b.vals[i])*(b.xs[j]-b.xs[i]) {
				b.hull = b.hull[:len(b.hull)-1]
				continue
			}
			break
		}
		b.hull = append(b.hull, k)
	}
	b.slopes = make([]float64, len(b.hull)-1)
	for i := range b.slopes {
		h0, h1 := b.hull[i], b.hull[i+1]
		b.slopes[i] = (b.vals[h1] - b.vals[h0]) / (b.xs[h1] - b.xs[h0])
	}
	return b
}

// argmin returns the table index minimising vals[k] − slope·xs[k] over the hull.
func (b *blockSolver) argmin(slope float64) int {
	// The minimiser is the first hull vertex whose outgoing slope exceeds slope.
	i := sort.SearchFloat64s(b.slopes, slope)
	for i < len(b.slopes) && b.slopes[i] <= slope {
		i++
	}
	return b.hull[i]
}

// window describes the blocks of a window of s steps: counts and normalised weights
// Σ_{k∈block} c^{−k}·e^{−lmax}, and the normalised target A·e^{−lmax}.
type window struct {
	n []float64
	w []float64
}

func (b *blockSolver) window(s int) (win window, scale float64) {
	nb := min(s, maxBlocks)
	win.n, win.w = make([]float64, nb), make([]float64, nb)
	// log c^{−k} = −k·logc is largest at k = 1 (c ≥ 1) or k = s (c < 1).
	lmax := -b.logc
	if b.logc < 0 {
		lmax = -float64(s) * b.logc
	}
	k0 := 1
	for i := range nb {
		k1 := (i + 1) * s / nb // blocks cover k0..k1
		cnt := k1 - k0 + 1
		// Σ_{k=k0}^{k1} e^{−k·logc − lmax} = e^{−k0·logc − lmax}·Σ_{j<cnt} e^{−j·logc}.
		geo := float64(cnt)
		if b.logc != 0 {
			geo = math.Expm1(-float64(cnt)*b.logc) / math.Expm1(-b.logc)
		}
		win.n[i] = float64(cnt)
		win.w[i] = math.Exp(-float64(k0)*b.logc-lmax) * geo
		k0 = k1 + 1
	}
	return win, math.Exp(-lmax)
}

// value returns an upper bound on V_s(A) (in φ's units) and the per-block shifts that attain
// it, or +Inf when even the largest tabulated shifts cannot meet the constraint.
func (b *blockSolver) value(s int, A float64) (float64, []float64) {
	win, scale := b.window(s)
	if A <= 0 {
		return float64(s) * b.perStep, make([]float64, len(win.n))
	}
	target := A * scale
	if !(target > 0) {
		return math.Inf(1), nil // the weights underflow: far past any useful window
	}
	ks := make([]int, len(win.n))
	reach := func(mu float64) float64 {
		sum := 0.0
		for i := range win.n {
			ks[i] = b.argmin(mu * win.w[i] / win.n[i])
			sum += win.w[i] * b.xs[ks[i]]
		}
		return sum
	}
	// Slopes of the hull lie in [slopes[0], slopes[last]]; μ·w/n must sweep past both.
	wmin, wmax := math.Inf(1), 0.0
	for i := range win.n {
		if r := win.w[i] / win.n[i]; r > 0 {
			wmin, wmax = math.Min(wmin, r), math.Max(wmax, r)
		}
	}
	if len(b.slopes) == 0 || wmax <= 0 {
		return math.Inf(1), nil
	}
	hi := b.slopes[len(b.slopes)-1] / wmin * 2
	if math.IsInf(hi, 0) || reach(hi) < target {
		return math.Inf(1), nil
	}
	lo := math.Max(b.slopes[0], 1e-300) / wmax / 2
	for range 60 {
		mid := math.Sqrt(lo * hi)
		if reach(mid) >= target {
			hi = mid
		} else {
			lo = mid
		}
		if hi/lo < 1+1e-12 {
			break
		}
	}
	reach(hi)
	total := 0.0
	shifts := make([]float64, len(win.n))
	for i := range win.n {
		total += win.n[i] * b.vals[ks[i]]
		shifts[i] = b.xs[ks[i]]
	}
	return total, shifts
}

// bound returns the smallest value over cuts τ = T − s, s on a grid (every s up to 32, then
// geometric steps of 5%), and the cut attaining it; T·φ_α(0) (composition, τ = 0) when no cut
// does better. Windows whose composition part alone cannot beat the best so far are skipped.
func (b *blockSolver) bound(T int) (float64, int) {
	best, tau := float64(T)*b.perStep, 0
	for s := 1; s < T; {
		if float64(s)*b.perStep >= best {
			break
		}
		if v, _ := b.value(s, b.tr.at(T-s)); v < best {
			best, tau = v, T-s
		}
		if s < 32 {
			s++
		} else {
			s = max(s+1, int(float64(s)*1.05))
		}
	}
	return best, tau
}
