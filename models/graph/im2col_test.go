package graph

import (
	"math/rand/v2"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestPatchOp checks patchOp (im2col) and its gradient (col2im) against gorgonia's Im2Col on
// the conv geometries of the presets and padded odd shapes: values bit-identical.
func TestPatchOp(t *testing.T) {
	for _, tc := range []struct {
		name               string
		n, c, h, w         int
		k, stride, padding int
	}{
		{"cnn-tramer-boneh conv1", 9, 1, 28, 28, 8, 2, 3},
		{"cnn-tramer-boneh conv2", 9, 16, 13, 13, 4, 2, 0},
		{"scatternet conv1", 3, 81, 7, 7, 3, 2, 1},
		{"odd padded stride 1", 4, 3, 7, 6, 3, 1, 1},
		{"padding wider than the kernel's overlap", 2, 2, 5, 4, 3, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(9, 10))
			shape := []int{tc.n, tc.c, tc.h, tc.w}
			x := make([]float32, tc.n*tc.c*tc.h*tc.w)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			op := patchOp{k: tc.k, s: tc.stride, pad: tc.padding}
			oh, ow := op.outHW(tc.h, tc.w)
			rows, d := tc.n*oh*ow, tc.c*tc.k*tc.k
			r := make([]float32, rows*d)
			for i := range r {
				r[i] = float32(rng.NormFloat64())
			}
			run := func(ours bool) (a, dx []float32) {
				return valueAndGrad(t, shape, x, r, func(xn *G.Node) (*G.Node, error) {
					if ours {
						return G.ApplyOp(op, xn)
					}
					an, err := G.Im2Col(xn, tensor.Shape{tc.k, tc.k}, tensor.Shape{tc.padding, tc.padding},
						tensor.Shape{tc.stride, tc.stride}, tensor.Shape{1, 1})
					if err != nil {
						return nil, err
					}
					return G.Reshape(an, tensor.Shape{rows, d})
				})
			}
			wantA, wantDX := run(false)
			gotA, gotDX := run(true)
			if !slices.Equal(gotA, wantA) {
				t.Error("patches differ from gorgonia's Im2Col")
			}
			if !slices.Equal(gotDX, wantDX) {
				t.Errorf("gradient differs from gorgonia's col2im (max relative difference %g)", maxRelDiff(gotDX, wantDX))
			}
			// A kept buffer holding garbage (as after the tape machine reused its memory) gives
			// the same patches: the padding entries are zeroed, not assumed zero.
			kept := patchOp{k: tc.k, s: tc.stride, pad: tc.padding, out: &outBuf{data: make([]float32, rows*d)}}
			for i := range kept.out.data {
				kept.out.data[i] = 7
			}
			v, err := kept.Do(tensor.New(tensor.WithBacking(x), tensor.WithShape(shape...)))
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := float32s(v); !slices.Equal(got, wantA) {
				t.Error("patches written into a dirty kept buffer differ from gorgonia's Im2Col")
			}
		})
	}
}
