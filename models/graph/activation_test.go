package graph

import (
	"math"
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
)

// TestActOp checks actOp against gorgonia's Tanh and Rectify, forward and gradient, on shapes
// that are and are not split across goroutines, with zeros and NaNs among the inputs, and that
// a NaN input gives a NaN output.
func TestActOp(t *testing.T) {
	for _, tc := range []struct {
		name  string
		relu  bool
		shape []int
	}{
		{"tanh small", false, []int{3, 5}},
		{"tanh cnn conv1", false, []int{64, 16, 14, 14}},
		{"relu small", true, []int{7, 3}},
		{"relu mlp hidden", true, []int{256, 512}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(2, 3))
			size := 1
			for _, d := range tc.shape {
				size *= d
			}
			x, r := make([]float32, size), make([]float32, size)
			for i := range x {
				x[i], r[i] = float32(3*rng.NormFloat64()), float32(rng.NormFloat64())
			}
			x[0], x[size/2] = 0, float32(math.NaN())
			run := func(ours bool) (y, dx []float32) {
				return valueAndGrad(t, tc.shape, x, r, func(xn *G.Node) (*G.Node, error) {
					switch {
					case ours:
						return G.ApplyOp(actOp{relu: tc.relu, out: newOutBuf()}, xn)
					case tc.relu:
						return G.Rectify(xn)
					default:
						return G.Tanh(xn)
					}
				})
			}
			wantY, wantDX := run(false)
			gotY, gotDX := run(true)
			if v := gotY[size/2]; v == v {
				t.Errorf("NaN input gave %v", v)
			}
			gotY[size/2], wantY[size/2] = 0, 0
			if d := maxRelDiff(gotY, wantY); d != 0 {
				t.Errorf("forward differs from gorgonia's by %g relative", d)
			}
			// gorgonia multiplies the NaN element's gradient by 0 or 1 − NaN²: skip it.
			gotDX[size/2], wantDX[size/2] = 0, 0
			if d := maxRelDiff(gotDX, wantDX); d > 1e-6 {
				t.Errorf("gradient differs from gorgonia's by %g relative", d)
			}
		})
	}
}
