package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	"github.com/dptrain/dptrain/models/internal/core"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// A conv layer's GEMM produces its output with one row per (sample, position) and one column
// per channel, (N, H, W, C); pooling, GroupNorm and the next im2col take (N, C, H, W).
// nhwcOp moves between the two layouts with one transpose per sample, split across
// goroutines: gorgonia's generic Transpose walks an N-dimensional iterator per element and
// cost about 12% of a cnn-tramer-boneh step. The op is a permutation, so its gradient is the
// inverse permutation, nhwcOp with !toNCHW.
type nhwcOp struct {
	toNCHW bool // (N, H, W, C) → (N, C, H, W); false: the inverse
	out    *outBuf
}

func (op nhwcOp) Arity() int { return 1 }
func (op nhwcOp) Type() hm.Type {
	t := G.TensorType{Dims: 4, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t)
}

// permute maps an input shape to the output shape.
func (op nhwcOp) permute(s tensor.Shape) tensor.Shape {
	if op.toNCHW {
		return tensor.Shape{s[0], s[3], s[1], s[2]}
	}
	return tensor.Shape{s[0], s[2], s[3], s[1]}
}

func (op nhwcOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok || len(s) != 4 {
		return nil, fmt.Errorf("models: %s needs a 4-D input, got %v", op, in[0])
	}
	return op.permute(s), nil
}

func (op nhwcOp) Do(in ...G.Value) (G.Value, error) {
	x, err := float32s(in[0])
	if err != nil {
		return nil, err
	}
	s := shapeOf(in[0])
	// Per sample, NHWC is a (H·W)×C matrix and NCHW its transpose C×(H·W).
	rows, cols := s[1]*s[2], s[3]
	if !op.toNCHW {
		rows, cols = s[1], s[2]*s[3]
	}
	y := op.out.get(len(x), false)
	transposeEach(x, y, s[0], rows, cols, 0)
	return tensor.New(tensor.WithBacking(y), tensor.WithShape(op.permute(s)...)), nil
}

func (op nhwcOp) ReturnsPtr() bool      { return false }
func (op nhwcOp) CallsExtern() bool     { return false }
func (op nhwcOp) OverwritesInput() int  { return -1 }
func (op nhwcOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op nhwcOp) Hashcode() uint32      { return fnvHash(op.String()) }
func (op nhwcOp) String() string {
	if op.toNCHW {
		return "NHWC→NCHW"
	}
	return "NCHW→NHWC"
}
func (op nhwcOp) DiffWRT(int) []bool { return []bool{true} }
func (op nhwcOp) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	dx, err := G.ApplyOp(nhwcOp{!op.toNCHW, newOutBuf()}, grad)
	return G.Nodes{dx}, err
}

// transposeEach writes the transpose of each of the n rows×cols matrices stored one after the
// other in src to dst, splitting the matrices across workers goroutines (≤ 0: GOMAXPROCS).
// Each element is copied once, so the result does not depend on the split.
func transposeEach(src, dst []float32, n, rows, cols, workers int) {
	m := rows * cols
	forPlanes(n, m, workers, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			core.Transpose(src[b*m:(b+1)*m], dst[b*m:(b+1)*m], rows, cols)
		}
	})
}
