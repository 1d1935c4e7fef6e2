package models

import (
	"math"
)

// ClipScale is the factor by which an example whose gradient has l2 norm norm enters a clipped
// sum (Abadi et al. 2016, Algorithm 1, the clipping step): ClipFactor(clip, norm) when the norm
// exceeds clip (clipped), 1 when it does not, and 0 when the norm is NaN or infinite
// (nonFinite). A non-finite gradient has no direction to clip to; it is clipped to zero, which
// changes the sum by 0 ≤ C, so the per-example function stays total and whether a step runs
// never depends on the private data. The callers zero such an example's rows rather than
// multiply them by 0 (0·Inf and 0·NaN are NaN).
func ClipScale(clip, norm float64) (f float32, clipped, nonFinite bool) {
	switch {
	case math.IsNaN(norm) || math.IsInf(norm, 0):
		return 0, false, true
	case norm > clip:
		return ClipFactor(clip, norm), true, false
	}
	return 1, false, false
}

// ClipFactor is the per-example clipping scale min(1, clip/norm), rounded down to float32 so
// that the clipped contribution's norm never exceeds clip through rounding (the privacy
// contract of package accounting: round against privacy). Every optimizer that clips per example with SquaredNorms and ScaledSum uses
// it (through ClipScale, which also handles a non-finite norm); norm must not be NaN.
func ClipFactor(clip, norm float64) float32 {
	if norm <= clip {
		return 1
	}
	c := clip / norm
	f := float32(c)
	if float64(f) > c {
		f = math.Nextafter32(f, 0)
	}
	return f
}
