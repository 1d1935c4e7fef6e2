package convergent

import "math"

// maxTrack caps how many steps of the forward W∞ recursion are stored. Beyond it the tracked
// distance is replaced by its supremum, which is valid (a larger distance only asks for more
// shift) and only loses tightness.
const maxTrack = 1 << 20

// tracker is the forward W∞ tracking recursion of Lemma 3.5 / Lemma 3.10 (full batch) and the
// "differing example in every batch" form of Lemma A.2 / Theorem 3.12:
//
//	D_0 = 0,  D_t = min( g(D_{t−1}) + add , D_{t−1} + jump , D ),
//
// with add = 2ηK/b, jump = 2ηK and D the domain diameter. D_t is non-decreasing (the map is)
// and bounded by D. The step-by-step minimum is never worse than the paper's closed form
// of Theorem 3.1 (the min is taken at each step, not once over closed forms).
type tracker struct {
	g               growth
	add, jump, diam float64
}

func (tr tracker) next(x float64) float64 {
	return math.Min(math.Min(tr.g.apply(x)+tr.add, x+tr.jump), tr.diam)
}

// track is a tracked sequence: d[t] = D_t for t < len(d), and sup ≥ D_t for every t, with
// d[t] ≥ sat for t ≥ len(d) − 1 (saturated). For t ≥ len(d) accountants use sup.
type track struct {
	d   []float64
	sup float64
}

// newTrack runs the recursion until it reaches its supremum (to a relative 1e-9 when the
// supremum is a limit, not reached) or maxTrack steps.
func newTrack(tr tracker) track {
	sup := tr.diam
	if tr.g.lambda == 1 && tr.g.coef < 0 {
		// c < 1: D_t ≤ c·D_{t−1} + add converges to add/(1−c); round up.
		if lim := tr.add / (-tr.g.coef) * (1 + 1e-12); lim < sup {
			sup = lim
		}
	}
	d := []float64{0}
	x := 0.0
	for len(d) < maxTrack {
		x = tr.next(x)
		d = append(d, x)
		if x >= sup*(1-1e-9) || x == d[len(d)-2] {
			break
		}
	}
	return track{d: d, sup: sup}
}

// at returns an upper bound on D_t: the tracked value, or sup past the stored prefix.
func (k track) at(t int) float64 {
	if t < len(k.d) {
		return k.d[t]
	}
	return k.sup
}
