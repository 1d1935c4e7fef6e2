package graph

import (
	"fmt"
	"hash"
	"math"

	"github.com/chewxy/hm"
	"github.com/chewxy/math32"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// actOp is an elementwise activation, tanh or ReLU, computed into an output buffer kept across
// runs (outBuf) and split across goroutines. gorgonia's Tanh and Rectify allocate their output
// (and their gradients several temporaries) on every run, and run on one goroutine. The values
// are gorgonia's: math32.Tanh, and ReLU's max(x, 0) (a NaN stays NaN; gorgonia gives −0 for
// negative x, this +0). ReLU's gradient passes where x's sign bit is clear: as gorgonia's
// [x ≥ 0] except at x = −0 exactly. Each element is computed
// by one goroutine with the same instructions, so the result does not depend on the split.
type actOp struct {
	relu bool // false: tanh
	out  *outBuf
}

func (op actOp) name() string {
	if op.relu {
		return "relu"
	}
	return "tanh"
}

func (op actOp) Arity() int { return 1 }
func (op actOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a)
}
func (op actOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("models: %s: bad input shape %v", op.name(), in[0])
	}
	return s.Clone(), nil
}
func (op actOp) Do(in ...G.Value) (G.Value, error) {
	x, err := float32s(in[0])
	if err != nil {
		return nil, err
	}
	y := op.out.get(len(x), false)
	forRanges(len(x), func(lo, hi int) {
		if op.relu {
			for i, v := range x[lo:hi] {
				y[lo+i] = max(v, 0) // branch-free; NaN stays NaN (Go's max)
			}
			return
		}
		for i, v := range x[lo:hi] {
			y[lo+i] = math32.Tanh(v)
		}
	})
	return tensor.New(tensor.WithBacking(y), tensor.WithShape(shapeOf(in[0]).Clone()...)), nil
}
func (op actOp) ReturnsPtr() bool      { return false }
func (op actOp) CallsExtern() bool     { return false }
func (op actOp) OverwritesInput() int  { return -1 }
func (op actOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op actOp) Hashcode() uint32      { return fnvHash(op.String()) }
func (op actOp) String() string        { return op.name() }
func (op actOp) DiffWRT(int) []bool    { return []bool{true} }

// SymDiff gives ReLU's gradient from x and tanh's
// from y = tanh(x): (1 − y²)·∂L/∂y.
func (op actOp) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	from := out
	if op.relu {
		from = in[0]
	}
	dx, err := G.ApplyOp(actDiffOp{op.relu, newOutBuf()}, from, grad)
	return G.Nodes{dx}, err
}

// actDiffOp maps (x for ReLU or y for tanh, ∂L/∂y) to ∂L/∂x.
type actDiffOp struct {
	relu bool
	out  *outBuf
}

func (op actDiffOp) Arity() int { return 2 }
func (op actDiffOp) Type() hm.Type {
	a := hm.TypeVariable('a')
	return hm.NewFnType(a, a, a)
}
func (op actDiffOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("models: %s: bad input shape %v", op, in[0])
	}
	return s.Clone(), nil
}
func (op actDiffOp) Do(in ...G.Value) (G.Value, error) {
	v, err := float32s(in[0])
	if err != nil {
		return nil, err
	}
	g, err := float32s(in[1])
	if err != nil {
		return nil, err
	}
	if len(g) != len(v) {
		return nil, fmt.Errorf("models: %s: %d gradients for %d values", op, len(g), len(v))
	}
	dx := op.out.get(len(v), false)
	forRanges(len(v), func(lo, hi int) {
		if op.relu {
			gs := g[lo:hi]
			for i, x := range v[lo:hi] {
				// Branch-free: keep the gradient where x's sign bit is clear (x ≥ +0).
				keep := uint32(int32(^math.Float32bits(x)) >> 31)
				dx[lo+i] = math.Float32frombits(math.Float32bits(gs[i]) & keep)
			}
			return
		}
		for i, y := range v[lo:hi] {
			dx[lo+i] = (1 - y*y) * g[lo+i]
		}
	})
	return tensor.New(tensor.WithBacking(dx), tensor.WithShape(shapeOf(in[0]).Clone()...)), nil
}
func (op actDiffOp) ReturnsPtr() bool      { return false }
func (op actDiffOp) CallsExtern() bool     { return false }
func (op actDiffOp) OverwritesInput() int  { return -1 }
func (op actDiffOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op actDiffOp) Hashcode() uint32      { return fnvHash(op.String()) }
func (op actDiffOp) String() string        { return actOp{relu: op.relu}.name() + "Diff" }

// forRanges calls f on consecutive ranges covering [0, n), on up to GOMAXPROCS goroutines for
// long vectors (forPlanes over blocks of 4096 elements).
func forRanges(n int, f func(lo, hi int)) {
	const block = 1 << 12
	forPlanes((n+block-1)/block, block, 0, func(lo, hi int) {
		f(lo*block, min(hi*block, n))
	})
}
