package models

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/dptrain/dptrain/internal/kernels"
)

// Weight standardisation of conv layers (Qiao et al., "Micro-Batch Training with Batch-Channel
// Normalization and Weight Standardization"; used with GroupNorm for private training by
// De, Berrada, Hayes, Smith & Balle (2022), "Unlocking High-Accuracy Differentially Private
// Image Classification through Scale"). A standardised conv layer computes its output
// with
//
//	Ŵ_o = (W_o − mean(W_o)) / √(var(W_o) + ε)
//
// in place of each output channel o's weights W_o (a column of the d×k weight matrix, over its
// fan-in d = C·kh·kw; var is the biased variance, ε = weightStdEpsilon). It is a
// reparametrisation: Ŵ is a function of the parameters alone, never of the batch, so every
// example's loss still depends on its own input only, and its gradient with respect to the
// parameters W is the gradient with respect to Ŵ mapped back through the standardisation's
// Jacobian, which is the same linear map for every example:
//
//	∂ℓ/∂W_o = (1/σ_o) (v_o − mean(v_o) − Ŵ_o·mean(v_o ⊙ Ŵ_o)),  v_o = ∂ℓ/∂Ŵ_o,
//
// the derivative of any normalisation x̂ = (x − μ)/σ (as groupNormaliseDiffOp). Per-example
// clipping must clip this mapped-back gradient (the one the privacy analysis bounds), not v:
// the map is a contraction times 1/σ_o, so ‖v‖ is neither its norm nor a bound on it. Both
// engines therefore materialise each example's v_i = P_iᵀG_i for a standardised layer, map it
// back, and take the norm of and sum the mapped-back gradient itself: the clipped sum holds
// exactly c_i times the vector whose norm gave c_i.

// weightStdEpsilon is ε in the standardisation's denominator.
const weightStdEpsilon = 1e-5

// standardise writes the standardised weights of the d×k row-major matrix w (one column per
// output channel) into hat and 1/σ_o into inv (len k); mean is scratch of length k. The
// statistics are computed in float64, in two passes (mean, then squared deviations).
func standardise(w, hat []float32, inv, mean []float64, d, k int) {
	mean, inv = mean[:k], inv[:k]
	clear(mean)
	clear(inv)
	for r := 0; r < d; r++ {
		for o, v := range w[r*k : (r+1)*k] {
			mean[o] += float64(v)
		}
	}
	for o := range mean {
		mean[o] /= float64(d)
	}
	for r := 0; r < d; r++ {
		for o, v := range w[r*k : (r+1)*k] {
			e := float64(v) - mean[o]
			inv[o] += e * e
		}
	}
	for o, ss := range inv {
		inv[o] = 1 / math.Sqrt(ss/float64(d)+weightStdEpsilon)
	}
	for r := 0; r < d; r++ {
		for o, v := range w[r*k : (r+1)*k] {
			hat[r*k+o] = float32((float64(v) - mean[o]) * inv[o])
		}
	}
}

// standardiseBack maps v (d×k row-major, a gradient with respect to the standardised weights
// hat) in place to the gradient with respect to the raw weights: per column o,
// (1/σ_o)(v_o − mean(v_o) − Ŵ_o·mean(v_o ⊙ Ŵ_o)). inv holds 1/σ_o; acc is float64 scratch of
// length at least 2k, returned (grown if needed).
func standardiseBack(v, hat []float32, inv []float64, d, k int, acc []float64) []float64 {
	if cap(acc) < 2*k {
		acc = make([]float64, 2*k)
	}
	acc = acc[:2*k]
	mv, mvh := acc[:k], acc[k:]
	clear(acc)
	for r := 0; r < d; r++ {
		h := hat[r*k : (r+1)*k]
		for o, x := range v[r*k : (r+1)*k] {
			mv[o] += float64(x)
			mvh[o] += float64(x) * float64(h[o])
		}
	}
	for o := range mv {
		mv[o] /= float64(d)
		mvh[o] /= float64(d)
	}
	for r := 0; r < d; r++ {
		h := hat[r*k : (r+1)*k]
		row := v[r*k : (r+1)*k]
		for o, x := range row {
			row[o] = float32(inv[o] * (float64(x) - mv[o] - float64(h[o])*mvh[o]))
		}
	}
	return acc
}

// wsState holds a network's standardised conv weights, in parameter row order, for the graph
// engine's ghost-clipping path (the graph computes its own Ŵ for the forward pass).
type wsState struct {
	hat [][]float32 // by parameter layer; nil for layers that are not standardised
	inv [][]float64
	acc []float64
}

// refresh recomputes Ŵ and 1/σ of every standardised layer from the current parameters.
func (s *wsState) refresh(p *plan, params []float32) {
	if s.hat == nil {
		s.hat, s.inv = make([][]float32, len(p.layers)), make([][]float64, len(p.layers))
	}
	for j := range p.layers {
		l := &p.layers[j]
		if !l.ws {
			continue
		}
		if s.hat[j] == nil {
			s.hat[j], s.inv[j] = make([]float32, l.d*l.k), make([]float64, l.k)
		}
		s.acc = kernels.GrowF64(s.acc, l.k)
		standardise(params[l.w:l.w+l.d*l.k], s.hat[j], s.inv[j], s.acc, l.d, l.k)
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
	standardise(w, hat, make([]float64, op.k), make([]float64, op.k), op.d, op.k)
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
	standardise(w, hat, inv, make([]float64, op.k), op.d, op.k)
	dw := append([]float32(nil), g...)
	standardiseBack(dw, hat, inv, op.d, op.k, nil)
	return tensor.New(tensor.WithBacking(dw), tensor.WithShape(op.d, op.k)), nil
}
func (op wsDiffOp) ReturnsPtr() bool      { return false }
func (op wsDiffOp) CallsExtern() bool     { return false }
func (op wsDiffOp) OverwritesInput() int  { return -1 }
func (op wsDiffOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op wsDiffOp) Hashcode() uint32      { return fnvHash(op.String()) }
func (op wsDiffOp) String() string        { return fmt.Sprintf("weightStandardiseDiff%dx%d", op.d, op.k) }
