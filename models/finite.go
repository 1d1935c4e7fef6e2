package models

import (
	"fmt"
	"math"
)

// finiteNorm returns an error when sample i's gradient norm is NaN or infinite. Such a
// gradient has no direction to clip to: scaling it by 0 would silently drop the example
// (and a batch-coupled overflow would make one example's presence change another's
// contribution), so the step must fail instead of releasing anything.
func finiteNorm(norm float64, i int) error {
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return fmt.Errorf("models: sample %d of the batch has a non-finite gradient norm (%v); "+
			"lower optimizer.learning_rate or normalise the inputs (data.normalize)", i, norm)
	}
	return nil
}

// ClipFactor is the per-example clipping scale min(1, clip/norm), rounded down to float32 so
// that the clipped contribution's norm never exceeds clip through rounding (DESIGN.md: round
// against privacy). Every optimizer that clips per example with SquaredNorms and ScaledSum uses
// it; norm must be finite (see the callers' checks).
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
