package layer_test

import (
	"fmt"

	"github.com/dptrain/dptrain/layer"
)

// A dense layer's per-example gradient norm is cheapest by the Gram identity (one row per
// example); a conv layer with many output positions and few channels materialises AᵢᵀGᵢ.
func ExampleGeometry_UseGram() {
	dense := layer.Geometry{Rows: 1, In: 784, Out: 512, Bias: true}
	conv := layer.Geometry{Rows: 28 * 28, In: 1 * 8 * 8, Out: 16, Bias: true}
	fmt.Println("dense:", dense.UseGram(), "conv:", conv.UseGram())
	// Output:
	// dense: true conv: false
}
