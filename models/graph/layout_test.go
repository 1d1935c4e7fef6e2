package graph

import (
	"math/rand/v2"
	"slices"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestNHWCOp checks nhwcOp against gorgonia's Transpose, forward and gradient, in both
// directions, and that transposeEach's output does not depend on the number of workers.
func TestNHWCOp(t *testing.T) {
	for _, tc := range []struct {
		name   string
		toNCHW bool
		perm   []int
		shape  []int
	}{
		{"conv1 of cnn-tramer-boneh to NCHW", true, []int{0, 3, 1, 2}, []int{64, 14, 14, 16}},
		{"odd shape to NCHW", true, []int{0, 3, 1, 2}, []int{3, 2, 5, 7}},
		{"odd shape to NHWC", false, []int{0, 2, 3, 1}, []int{3, 7, 2, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(7, 8))
			size := tc.shape[0] * tc.shape[1] * tc.shape[2] * tc.shape[3]
			x, r := make([]float32, size), make([]float32, size)
			for i := range x {
				x[i], r[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
			}
			run := func(ours bool) (y, dx []float32) {
				return valueAndGrad(t, tc.shape, x, r, func(xn *G.Node) (*G.Node, error) {
					if ours {
						return G.ApplyOp(nhwcOp{toNCHW: tc.toNCHW}, xn)
					}
					return G.Transpose(xn, tc.perm...)
				})
			}
			wantY, wantDX := run(false)
			gotY, gotDX := run(true)
			if !slices.Equal(gotY, wantY) {
				t.Error("forward differs from gorgonia's Transpose")
			}
			if !slices.Equal(gotDX, wantDX) {
				t.Error("gradient differs from gorgonia's Transpose's")
			}
			rows, cols := tc.shape[1]*tc.shape[2], tc.shape[3]
			if !tc.toNCHW {
				rows, cols = tc.shape[1], tc.shape[2]*tc.shape[3]
			}
			one, three := make([]float32, size), make([]float32, size)
			transposeEach(x, one, tc.shape[0], rows, cols, 1)
			transposeEach(x, three, tc.shape[0], rows, cols, 3)
			if !slices.Equal(one, three) || !slices.Equal(one, wantY) {
				t.Error("transposeEach depends on the number of workers")
			}
		})
	}
}

// valueAndGrad runs f on x (of the given shape) in a gorgonia graph and returns f(x) and the
// gradient of Σ f(x)⊙r with respect to x, for comparing our ops with gorgonia's.
func valueAndGrad(t *testing.T, shape []int, x, r []float32, f func(*G.Node) (*G.Node, error)) (y, dx []float32) {
	t.Helper()
	g := G.NewGraph()
	xn := G.NewTensor(g, tensor.Float32, len(shape), G.WithShape(shape...), G.WithName("x"),
		G.WithValue(tensor.New(tensor.WithBacking(slices.Clone(x)), tensor.WithShape(shape...))))
	yn, err := f(xn)
	if err != nil {
		t.Fatal(err)
	}
	ys := yn.Shape().Clone()
	rn := G.NewTensor(g, tensor.Float32, len(ys), G.WithShape(ys...), G.WithName("r"),
		G.WithValue(tensor.New(tensor.WithBacking(slices.Clone(r)), tensor.WithShape(ys...))))
	cost := G.Must(G.Sum(G.Must(G.HadamardProd(yn, rn))))
	grads, err := G.Grad(cost, xn)
	if err != nil {
		t.Fatal(err)
	}
	var yv, gv G.Value
	G.Read(yn, &yv)
	G.Read(grads[0], &gv)
	vm := G.NewTapeMachine(g)
	defer vm.Close()
	if err := vm.RunAll(); err != nil {
		t.Fatal(err)
	}
	if !yv.Shape().Eq(ys) {
		t.Fatalf("output shape %v, want %v", yv.Shape(), ys)
	}
	y, err = float32s(yv)
	if err != nil {
		t.Fatal(err)
	}
	if dx, err = float32s(gv); err != nil {
		t.Fatal(err)
	}
	return slices.Clone(y), slices.Clone(dx)
}
