package optim

import (
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/internal/kernels"
)

// Norm2 returns the Euclidean norm of g, accumulated in float64 (kernels.SumSquares, as models.SumSquares).
func Norm2(g []float32) float64 { return math.Sqrt(kernels.SumSquares(g)) }

// ErrNotFiniteVector is the error of ClipL2 and ClipL2Linf for a vector with a NaN or
// infinite coordinate: it has no direction to keep, and setting it to zero would silently
// drop an example (or reset a model), so the caller must say what to fix.
var ErrNotFiniteVector = errors.New("the vector to clip has a NaN or infinite coordinate")

// ClipL2 scales g in place to min(1, c/‖g‖₂)·g, the per-sample clipping CP(g, c) of Abadi et al.
// (2016), and reports whether it changed g. c = +Inf leaves a finite g unchanged. A g with a
// NaN or infinite coordinate is left as it is and the error wraps ErrNotFiniteVector.
func ClipL2(g []float32, c float64) (bool, error) {
	norm := Norm2(g)
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		for i, v := range g {
			if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
				return false, fmt.Errorf("%w (coordinate %d of %d is %v)", ErrNotFiniteVector, i, len(g), v)
			}
		}
		// Finite coordinates whose squares overflow float64 cannot occur for float32 input.
		return false, fmt.Errorf("%w (norm %v)", ErrNotFiniteVector, norm)
	}
	if !(norm > c) {
		return false, nil
	}
	// The factor is shrunk by 2⁻²² relative so that rounding each coordinate to float32 (at
	// most 2⁻²⁴ relative) cannot carry the norm above c; the loop below checks it anyway.
	s := c / norm * (1 - 0x1p-22)
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
	return true, nil
}

// ClipL2Linf is Algorithm 2 of ModelMix (Xiao, Wan & Devadas, "Differentially Private Deep Learning with ModelMix", Section 4.2): l2 clipping to c, then truncation of
// every coordinate to [−c/√p, c/√p]. Afterwards ‖g‖₂ ≤ c and ‖g‖∞ ≤ c/√p. It reports whether
// either step changed g. p ≤ 1 is plain l2 clipping. A non-finite g is an error, as for ClipL2.
func ClipL2Linf(g []float32, c float64, p int) (bool, error) {
	clipped, err := ClipL2(g, c)
	if err != nil || p <= 1 {
		return clipped, err
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
	return clipped, nil
}
