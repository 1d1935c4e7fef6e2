package dptest

import (
	"math"
	"math/rand/v2"
)

// Example is one crafted input.
type Example struct {
	Name string
	X    []float32
}

// Crafted returns inputs of dimension dim at scale s designed to stress per-example clipping:
// a random example ×10⁴, an all-white image, a checkerboard, a block sign pattern (half +s,
// half −s: gradients that cancel across positions), and non-finite inputs (NaN, +Inf) that a
// total per-example function must clip to zero.
func Crafted(dim int, s float64, rng *rand.Rand) []Example {
	mk := func(f func(j int) float64) []float32 {
		x := make([]float32, dim)
		for j := range x {
			x[j] = float32(f(j))
		}
		return x
	}
	side := int(math.Sqrt(float64(dim)))
	return []Example{
		{"large", mk(func(int) float64 { return 1e4 * s * rng.NormFloat64() })},
		{"white", mk(func(int) float64 { return s })},
		{"checkerboard", mk(func(j int) float64 {
			if (j/max(side, 1)+j%max(side, 1))%2 == 0 {
				return s
			}
			return -s
		})},
		{"sign", mk(func(j int) float64 {
			if j < dim/2 {
				return s
			}
			return -s
		})},
		{"nan", mk(func(j int) float64 {
			if j == dim/2 {
				return math.NaN()
			}
			return s
		})},
		{"inf", mk(func(j int) float64 {
			if j == 0 {
				return math.Inf(1)
			}
			return s
		})},
	}
}

// Random returns n random examples of dimension dim at scale s with labels below classes.
func Random(n, dim, classes int, s float64, rng *rand.Rand) ([]float32, []int32) {
	x := make([]float32, n*dim)
	for i := range x {
		x[i] = float32(s * rng.NormFloat64())
	}
	y := make([]int32, n)
	for i := range y {
		y[i] = int32(rng.IntN(classes))
	}
	return x, y
}
