package kernels

import (
	"math"

	"gonum.org/v1/gonum/blas/blas32"
)

// SumSquares is Σ s_i² in float64, in four interleaved partial sums (one running sum would
// make every addition wait for the previous one). Optimizers' norms (optim.Norm2) use it too.
func SumSquares(s []float32) float64 {
	var v0, v1, v2, v3 float64
	i := 0
	for ; i+4 <= len(s); i += 4 {
		x := s[i : i+4 : i+4]
		v0 += float64(x[0]) * float64(x[0])
		v1 += float64(x[1]) * float64(x[1])
		v2 += float64(x[2]) * float64(x[2])
		v3 += float64(x[3]) * float64(x[3])
	}
	for _, x := range s[i:] {
		v0 += float64(x) * float64(x)
	}
	return (v0 + v1) + (v2 + v3)
}

// ColumnSums writes the column sums of the row-major matrix g with k columns into s.
func ColumnSums(s, g []float32, k int) {
	clear(s)
	for r := 0; r < len(g); r += k {
		for c, v := range g[r : r+k] {
			s[c] += v
		}
	}
}

// Grow returns s with length n, reallocated (zeroed) when its capacity is too small; the
// contents of a reused buffer are not cleared.
func Grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// GrowF64 is Grow for float64 buffers.
func GrowF64(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	return s[:n]
}

// general is the rows×cols row-major float32 matrix on the start of data.
func general(rows, cols int, data []float32) blas32.General {
	return blas32.General{Rows: rows, Cols: cols, Stride: cols, Data: data[:rows*cols]}
}

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
