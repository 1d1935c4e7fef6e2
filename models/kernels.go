package models

import (
	"github.com/dptrain/dptrain/internal/kernels"
	"github.com/dptrain/dptrain/layer"
)

// The per-example clipping kernels live in internal/kernels, below both this package and
// package optim; these are the names this package has always exported for them, and the
// unexported ones its own code calls.

// SquaredNorms adds each example's squared gradient norm of one layer to sq (kernels.SquaredNorms).
func SquaredNorms(sq []float64, a, g []float32, geo layer.Geometry, buf []float32) ([]float32, error) {
	return kernels.SquaredNorms(sq, a, g, geo, buf)
}

// ScaledSum adds Σ_i scale_i·∇ℓ_i of one layer to gw and gb (kernels.ScaledSum).
func ScaledSum(gw, gb []float32, a, g []float32, scale []float32, geo layer.Geometry, buf []float32) ([]float32, error) {
	return kernels.ScaledSum(gw, gb, a, g, scale, geo, buf)
}

// SumSquares is Σ s_i² in float64 (kernels.SumSquares).
func SumSquares(s []float32) float64 { return kernels.SumSquares(s) }

// ClipScale is the factor by which an example with gradient norm norm enters a clipped sum,
// and whether it was clipped or not finite (kernels.ClipScale).
func ClipScale(clip, norm float64) (f float32, clipped, nonFinite bool) {
	return kernels.ClipScale(clip, norm)
}

// ClipFactor is min(1, clip/norm) rounded down to float32 (kernels.ClipFactor).
func ClipFactor(clip, norm float64) float32 { return kernels.ClipFactor(clip, norm) }

func sumSq(s []float32) float64 { return kernels.SumSquares(s) }

func squaredNorms(sq []float64, a, g []float32, geo layer.Geometry, buf []float32, b64 []float64) ([]float32, []float64, error) {
	return kernels.SquaredNormsBuf(sq, a, g, geo, buf, b64)
}

func scaledSum(gw, gb []float32, a, g []float32, scale []float32, geo layer.Geometry, buf []float32, b64 []float64) ([]float32, []float64, error) {
	return kernels.ScaledSumBuf(gw, gb, a, g, scale, geo, buf, b64)
}

func toF64(dst []float64, src []float32) { kernels.ToF64(dst, src) }

func convSquaredNorm64(p64, g64 []float64, geo layer.Geometry, gram bool, s []float64) float64 {
	return kernels.ConvSquaredNorm64(p64, g64, geo, gram, s)
}

func sumProducts64(gw, gb []float64, blk []float64, scale []float32, geo layer.Geometry) {
	kernels.SumProducts64(gw, gb, blk, scale, geo)
}

func columnSums(s, g []float32, k int) { kernels.ColumnSums(s, g, k) }
