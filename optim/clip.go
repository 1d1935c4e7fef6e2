package optim

import "math"

// Norm2 returns the Euclidean norm of g, accumulated in float64.
func Norm2(g []float32) float64 {
	var s float64
	for _, v := range g {
		s += float64(v) * float64(v)
	}
	return math.Sqrt(s)
}

// ClipL2 scales g in place to min(1, c/‖g‖₂)·g, the per-sample clipping CP(g, c) of Abadi et al.
// (2016), and reports whether it changed g. c = +Inf leaves a finite g unchanged; a gradient
// with a NaN or infinite coordinate is set to 0.
func ClipL2(g []float32, c float64) bool {
	norm := Norm2(g)
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		// A non-finite gradient has no direction to keep: dropping it bounds the example's
		// contribution (by 0) where a NaN would reveal it in the released sum.
		clear(g)
		return true
	}
	if !(norm > c) {
		return false
	}
	s := c / norm
	for i, v := range g {
		g[i] = float32(float64(v) * s)
	}
	// float32 rounding can leave the norm an ulp above c: shrink each coordinate by one ulp
	// until it is not, rounding against privacy.
	for Norm2(g) > c {
		for i, v := range g {
			g[i] = math.Nextafter32(v, 0)
		}
	}
	return true
}

// ClipL2Linf is Algorithm 2 of ModelMix (seed-003 §3): l2 clipping to c, then truncation of
// every coordinate to [−c/√p, c/√p]. Afterwards ‖g‖₂ ≤ c and ‖g‖∞ ≤ c/√p. It reports whether
// either step changed g. p ≤ 1 is plain l2 clipping.
func ClipL2Linf(g []float32, c float64, p int) bool {
	clipped := ClipL2(g, c)
	if p <= 1 {
		return clipped
	}
	bound := c / math.Sqrt(float64(p))
	b32 := float32(bound)
	if float64(b32) > bound {
		b32 = math.Nextafter32(b32, 0)
	}
	for i, v := range g {
		switch {
		case v > b32:
			g[i], clipped = b32, true
		case v < -b32:
			g[i], clipped = -b32, true
		}
	}
	return clipped
}
