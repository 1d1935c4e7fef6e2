package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/dptrain/dptrain/internal/kernels"
	"github.com/dptrain/dptrain/models/internal/core"
)

// wsState holds a network's standardised conv weights, in parameter row order, for the graph
// engine's ghost-clipping path (the graph computes its own Ŵ for the forward pass).
type wsState struct {
	hat [][]float32 // by parameter layer; nil for layers that are not standardised
	inv [][]float64
	acc []float64
}

// refresh recomputes Ŵ and 1/σ of every standardised layer from the current parameters.
func (s *wsState) refresh(p *core.Net) {
	params := p.Params
	if s.hat == nil {
		s.hat, s.inv = make([][]float32, len(p.Layers)), make([][]float64, len(p.Layers))
	}
	for j := range p.Layers {
		l := &p.Layers[j]
		if !l.WS {
			continue
		}
		if s.hat[j] == nil {
			s.hat[j], s.inv[j] = make([]float32, l.D*l.K), make([]float64, l.K)
		}
		s.acc = kernels.GrowF64(s.acc, l.K)
		core.Standardise(params[l.W:l.W+l.D*l.K], s.hat[j], s.inv[j], s.acc, l.D, l.K)
	}
}

// wsOp maps a d×k weight matrix W to its standardised Ŵ (per column), for the graph engine.
type wsOp struct{ d, k int }

func (op wsOp) Arity() int { return 1 }
func (op wsOp) Type() hm.Type {
	t := G.TensorType{Dims: 2, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t)
}
func (op wsOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok || len(s) != 2 || s[0] != op.d || s[1] != op.k {
		return nil, fmt.Errorf("models: weight standardisation of %d×%d cannot take shape %v", op.d, op.k, in[0])
	}
	return s.Clone(), nil
}
func (op wsOp) Do(in ...G.Value) (G.Value, error) {
	w, err := float32s(in[0])
	if err != nil {
		return nil, err
	}
	hat := make([]float32, op.d*op.k)
	core.Standardise(w, hat, make([]float64, op.k), make([]float64, op.k), op.d, op.k)
	return tensor.New(tensor.WithBacking(hat), tensor.WithShape(op.d, op.k)), nil
}
func (op wsOp) ReturnsPtr() bool      { return false }
func (op wsOp) CallsExtern() bool     { return false }
func (op wsOp) OverwritesInput() int  { return -1 }
func (op wsOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op wsOp) Hashcode() uint32      { return fnvHash(op.String()) }
func (op wsOp) String() string        { return fmt.Sprintf("weightStandardise%dx%d", op.d, op.k) }
func (op wsOp) DiffWRT(int) []bool    { return []bool{true} }
func (op wsOp) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	dw, err := G.ApplyOp(wsDiffOp(op), in[0], grad)
	return G.Nodes{dw}, err
}

// wsDiffOp maps (W, ∂L/∂Ŵ) to ∂L/∂W (standardiseBack).
type wsDiffOp struct{ d, k int }

func (op wsDiffOp) Arity() int { return 2 }
func (op wsDiffOp) Type() hm.Type {
	t := G.TensorType{Dims: 2, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t, t)
}
func (op wsDiffOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("models: weight standardisation gradient: bad input shape %v", in[0])
	}
	return s.Clone(), nil
}
func (op wsDiffOp) Do(in ...G.Value) (G.Value, error) {
	w, err := float32s(in[0])
	if err != nil {
		return nil, err
	}
	g, err := float32s(in[1])
	if err != nil {
		return nil, err
	}
	hat, inv := make([]float32, op.d*op.k), make([]float64, op.k)
	core.Standardise(w, hat, inv, make([]float64, op.k), op.d, op.k)
	dw := append([]float32(nil), g...)
	core.StandardiseBack(dw, hat, inv, op.d, op.k, nil)
	return tensor.New(tensor.WithBacking(dw), tensor.WithShape(op.d, op.k)), nil
}
func (op wsDiffOp) ReturnsPtr() bool      { return false }
func (op wsDiffOp) CallsExtern() bool     { return false }
func (op wsDiffOp) OverwritesInput() int  { return -1 }
func (op wsDiffOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op wsDiffOp) Hashcode() uint32      { return fnvHash(op.String()) }
func (op wsDiffOp) String() string        { return fmt.Sprintf("weightStandardiseDiff%dx%d", op.d, op.k) }
