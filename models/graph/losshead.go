package graph

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	"github.com/dptrain/dptrain/models/internal/core"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// The loss head: a row-local log-softmax on (N, K) logits.
//
// gorgonia.org/tensor v0.9.24's float32 LogSoftMax starts every row's running maximum from the
// first element of the whole array, not of the row: when one example's logits are far above
// another's, the other rows' exponentials underflow, their gradients become ±Inf or NaN, and
// one example changes every other example's clipped gradient (the sensitivity is no longer C).
// This op computes each row on its own, in float64, with the row's own maximum subtracted:
//
//	log p_k = z_k − m − log Σ_j exp(z_j − m),  m = max_j z_j,
//
// and its derivative ∂L/∂z_k = g_k − p_k Σ_j g_j (g = ∂L/∂log p) also row by row, so that
// rows never couple in either direction.
type logSoftmaxOp struct{}

func (logSoftmaxOp) Arity() int { return 1 }
func (logSoftmaxOp) Type() hm.Type {
	t := G.TensorType{Dims: 2, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t)
}
func (logSoftmaxOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok || len(s) != 2 {
		return nil, fmt.Errorf("models: log-softmax needs (N, K) logits, got %v", in[0])
	}
	return s.Clone(), nil
}

// rowLogSoftmax writes log p of row z into out (float64 arithmetic).
func rowLogSoftmax(z []float32, out []float64) {
	lse := core.LogSumExp(z)
	for k, v := range z {
		out[k] = float64(v) - lse
	}
}

func (op logSoftmaxOp) Do(in ...G.Value) (G.Value, error) {
	z, err := float32s(in[0])
	if err != nil {
		return nil, err
	}
	s := shapeOf(in[0])
	k := s[1]
	y := make([]float32, len(z))
	row := make([]float64, k)
	for r := 0; r < len(z); r += k {
		rowLogSoftmax(z[r:r+k], row)
		for c, v := range row {
			y[r+c] = float32(v)
		}
	}
	return tensor.New(tensor.WithBacking(y), tensor.WithShape(s.Clone()...)), nil
}
func (logSoftmaxOp) ReturnsPtr() bool         { return false }
func (logSoftmaxOp) CallsExtern() bool        { return false }
func (logSoftmaxOp) OverwritesInput() int     { return -1 }
func (op logSoftmaxOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op logSoftmaxOp) Hashcode() uint32      { return fnvHash(op.String()) }
func (logSoftmaxOp) String() string           { return "rowLogSoftmax" }
func (logSoftmaxOp) DiffWRT(int) []bool       { return []bool{true} }
func (logSoftmaxOp) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	dz, err := G.ApplyOp(logSoftmaxDiffOp{}, in[0], grad)
	return G.Nodes{dz}, err
}

// logSoftmaxDiffOp maps (z, ∂L/∂log p) to ∂L/∂z = g − p·Σ_j g_j, row by row in float64.
type logSoftmaxDiffOp struct{}

func (logSoftmaxDiffOp) Arity() int { return 2 }
func (logSoftmaxDiffOp) Type() hm.Type {
	t := G.TensorType{Dims: 2, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t, t)
}
func (logSoftmaxDiffOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok || len(s) != 2 {
		return nil, fmt.Errorf("models: log-softmax gradient needs (N, K) logits, got %v", in[0])
	}
	return s.Clone(), nil
}
func (logSoftmaxDiffOp) Do(in ...G.Value) (G.Value, error) {
	z, err := float32s(in[0])
	if err != nil {
		return nil, err
	}
	g, err := float32s(in[1])
	if err != nil {
		return nil, err
	}
	s := shapeOf(in[0])
	k := s[1]
	dz := make([]float32, len(z))
	logp := make([]float64, k)
	for r := 0; r < len(z); r += k {
		rowLogSoftmax(z[r:r+k], logp)
		var sg float64
		for _, v := range g[r : r+k] {
			sg += float64(v)
		}
		for c, lp := range logp {
			dz[r+c] = float32(float64(g[r+c]) - math.Exp(lp)*sg)
		}
	}
	return tensor.New(tensor.WithBacking(dz), tensor.WithShape(s.Clone()...)), nil
}
func (logSoftmaxDiffOp) ReturnsPtr() bool         { return false }
func (logSoftmaxDiffOp) CallsExtern() bool        { return false }
func (logSoftmaxDiffOp) OverwritesInput() int     { return -1 }
func (op logSoftmaxDiffOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op logSoftmaxDiffOp) Hashcode() uint32      { return fnvHash(op.String()) }
func (logSoftmaxDiffOp) String() string           { return "rowLogSoftmaxDiff" }

// logSoftmax is the row-local log-softmax of (N, K) logits.
func logSoftmax(z *G.Node) (*G.Node, error) { return G.ApplyOp(logSoftmaxOp{}, z) }
