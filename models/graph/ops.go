package graph

import (
	"fmt"
	"hash"
	"hash/fnv"
	"math"

	"github.com/chewxy/hm"
	"github.com/dptrain/dptrain/models/internal/core"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Custom gorgonia ops. gorgonia v0.9.18's AveragePool2D backward pass is wrong (it scatters
// the pooled gradient to one input per window, then divides window sums by the input width:
// a conv bias below a 2×2 average pool got 1/4 of its finite-difference gradient), its
// GroupNorm backward pass logs the whole gradient tensor on every run, and a GroupNorm built
// from its Mean/BroadcastSub primitives disagreed with finite differences by 5%. These ops
// replace them; max pooling uses the same op as average pooling for uniformity.
// Each forward op has a symbolic derivative op taking (x, ∂L/∂y) that recomputes what it
// needs from x. The only state an op keeps between runs is its output buffer (outBuf).

// outBuf is the output buffer of one op node of one tape, kept from one run to the next so that
// the training loop does not allocate (and clear) the activations' memory every step. It is
// safe because every node runs once per run and the tape machine is reset between runs, so no
// value of an earlier run is live when the node overwrites its buffer. Within a run the machine
// may write later values into the memory of a dead one, so an op rewrites or clears all of its
// buffer every run. Each node gets its own outBuf when the graph is built (a derivative op never
// shares its forward op's); a nil *outBuf allocates afresh on every run.
type outBuf struct{ data []float32 }

// newOutBuf returns an empty buffer for one op node.
func newOutBuf() *outBuf { return new(outBuf) }

// get returns a slice of n elements backed by the kept buffer, cleared when zero is set (its
// contents are otherwise undefined).
func (o *outBuf) get(n int, zero bool) []float32 {
	if o == nil {
		return make([]float32, n)
	}
	if cap(o.data) < n {
		o.data = make([]float32, n)
		return o.data
	}
	d := o.data[:n]
	if zero {
		clear(d)
	}
	return d
}

func fnvHash(s string) uint32 {
	h := fnv.New32a()
	h.Write([]byte(s))
	return h.Sum32()
}

func float32s(v G.Value) ([]float32, error) {
	t, ok := v.(tensor.Tensor)
	if !ok {
		return nil, fmt.Errorf("models: expected a tensor, got %T", v)
	}
	d, ok := t.Data().([]float32)
	if !ok {
		return nil, fmt.Errorf("models: expected float32 data, got %T", t.Data())
	}
	return d, nil
}

func shapeOf(v G.Value) tensor.Shape { return v.Shape() }

// pool2d is max or average pooling over k×k windows with stride s and no padding, on
// (N, C, H, W) tensors.
type pool2d struct {
	max  bool
	k, s int
}

func (p pool2d) kind() string {
	if p.max {
		return "max"
	}
	return "avg"
}

func (p pool2d) outHW(h, w int) (int, int) { return (h-p.k)/p.s + 1, (w-p.k)/p.s + 1 }

type poolOp struct {
	pool2d
	out *outBuf
	arg *argBuf // max pooling: where each window's gradient goes, for poolDiffOp; nil: none kept
}

// argBuf holds, from a max-pooling node's forward run to its gradient node's run in the same
// run of the tape, the index within its input plane of the element each window's gradient goes
// to. The forward node always runs before the gradient node (the gradient of its output depends
// on the output), and it rewrites every index on every run. It is kept from run to run like
// outBuf.
type argBuf struct{ idx []int32 }

// get returns n indices backed by the kept buffer (contents undefined).
func (a *argBuf) get(n int) []int32 {
	if cap(a.idx) < n {
		a.idx = make([]int32, n)
	}
	a.idx = a.idx[:n]
	return a.idx
}

func (op poolOp) Arity() int { return 1 }
func (op poolOp) Type() hm.Type {
	t := G.TensorType{Dims: 4, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t)
}
func (op poolOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok || len(s) != 4 {
		return nil, fmt.Errorf("models: %spool needs a 4-D input, got %v", op.kind(), in[0])
	}
	oh, ow := op.outHW(s[2], s[3])
	return tensor.Shape{s[0], s[1], oh, ow}, nil
}
func (op poolOp) Do(in ...G.Value) (G.Value, error) {
	x, err := float32s(in[0])
	if err != nil {
		return nil, err
	}
	s := shapeOf(in[0])
	n, c, h, w := s[0], s[1], s[2], s[3]
	oh, ow := op.outHW(h, w)
	y := op.out.get(n*c*oh*ow, false)
	var arg []int32
	if op.max && op.arg != nil {
		arg = op.arg.get(len(y))
	}
	op.forward(x, y, arg, n*c, h, w, 0)
	return tensor.New(tensor.WithBacking(y), tensor.WithShape(n, c, oh, ow)), nil
}
func (op poolOp) ReturnsPtr() bool      { return false }
func (op poolOp) CallsExtern() bool     { return false }
func (op poolOp) OverwritesInput() int  { return -1 }
func (op poolOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op poolOp) Hashcode() uint32      { return fnvHash(op.String()) }
func (op poolOp) String() string        { return fmt.Sprintf("%spool%d/%d", op.kind(), op.k, op.s) }
func (op poolOp) DiffWRT(int) []bool    { return []bool{true} }
func (op poolOp) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	dx, err := G.ApplyOp(poolDiffOp{op.pool2d, newOutBuf(), op.arg}, in[0], grad)
	return G.Nodes{dx}, err
}

// poolDiffOp maps (x, ∂L/∂y) to ∂L/∂x: the window's gradient goes to its (first) maximum, or
// is spread evenly over the window for average pooling.
type poolDiffOp struct {
	pool2d
	out *outBuf
	arg *argBuf // the forward node's, when it keeps indices
}

func (op poolDiffOp) Arity() int { return 2 }
func (op poolDiffOp) Type() hm.Type {
	t := G.TensorType{Dims: 4, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t, t)
}
func (op poolDiffOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("models: %spool gradient: bad input shape %v", op.kind(), in[0])
	}
	return s.Clone(), nil
}
func (op poolDiffOp) Do(in ...G.Value) (G.Value, error) {
	x, err := float32s(in[0])
	if err != nil {
		return nil, err
	}
	dy, err := float32s(in[1])
	if err != nil {
		return nil, err
	}
	s := shapeOf(in[0])
	n, c, h, w := s[0], s[1], s[2], s[3]
	dx := op.out.get(len(x), true)
	if op.max && op.arg != nil {
		if len(op.arg.idx) != len(dy) {
			return nil, fmt.Errorf("models: %s: the forward pass stored %d indices for %d gradients", op, len(op.arg.idx), len(dy))
		}
		op.backwardArg(op.arg.idx, dy, dx, n*c, h, w, 0)
	} else {
		op.backward(x, dy, dx, n*c, h, w, 0)
	}
	return tensor.New(tensor.WithBacking(dx), tensor.WithShape(s.Clone()...)), nil
}
func (op poolDiffOp) ReturnsPtr() bool      { return false }
func (op poolDiffOp) CallsExtern() bool     { return false }
func (op poolDiffOp) OverwritesInput() int  { return -1 }
func (op poolDiffOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op poolDiffOp) Hashcode() uint32      { return fnvHash(op.String()) }
func (op poolDiffOp) String() string        { return fmt.Sprintf("%spoolDiff%d/%d", op.kind(), op.k, op.s) }

// groupNormaliseOp is GroupNorm without its affine part (Wu & He 2018, eqs. 1–2): each
// sample's group of C/groups channels is shifted to mean 0 and divided by
// √(biased variance + core.GroupNormEpsilon).
type groupNormaliseOp struct{ groups int }

func (op groupNormaliseOp) Arity() int { return 1 }
func (op groupNormaliseOp) Type() hm.Type {
	t := G.TensorType{Dims: 4, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t)
}
func (op groupNormaliseOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok || len(s) != 4 || s[1]%op.groups != 0 {
		return nil, fmt.Errorf("models: groupnorm with %d groups cannot take shape %v", op.groups, in[0])
	}
	return s.Clone(), nil
}

// stats returns the mean and 1/σ of group segment x.
func groupStats(x []float32) (mean, inv float64) {
	for _, v := range x {
		mean += float64(v)
	}
	mean /= float64(len(x))
	var v2 float64
	for _, v := range x {
		d := float64(v) - mean
		v2 += d * d
	}
	return mean, 1 / math.Sqrt(v2/float64(len(x))+core.GroupNormEpsilon)
}

func (op groupNormaliseOp) Do(in ...G.Value) (G.Value, error) {
	x, err := float32s(in[0])
	if err != nil {
		return nil, err
	}
	s := shapeOf(in[0])
	y := make([]float32, len(x))
	m := len(x) / (s[0] * op.groups)
	for o := 0; o < len(x); o += m {
		mean, inv := groupStats(x[o : o+m])
		for i, v := range x[o : o+m] {
			y[o+i] = float32((float64(v) - mean) * inv)
		}
	}
	return tensor.New(tensor.WithBacking(y), tensor.WithShape(s.Clone()...)), nil
}
func (op groupNormaliseOp) ReturnsPtr() bool      { return false }
func (op groupNormaliseOp) CallsExtern() bool     { return false }
func (op groupNormaliseOp) OverwritesInput() int  { return -1 }
func (op groupNormaliseOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op groupNormaliseOp) Hashcode() uint32      { return fnvHash(op.String()) }
func (op groupNormaliseOp) String() string        { return fmt.Sprintf("groupNormalise%d", op.groups) }
func (op groupNormaliseOp) DiffWRT(int) []bool    { return []bool{true} }
func (op groupNormaliseOp) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	dx, err := G.ApplyOp(groupNormaliseDiffOp(op), in[0], grad)
	return G.Nodes{dx}, err
}

// groupNormaliseDiffOp maps (x, ∂L/∂x̂) to ∂L/∂x = (1/σ)(g − mean(g) − x̂·mean(g ⊙ x̂)) per
// group, the derivative of x̂ = (x − μ)/σ with μ and σ depending on x.
type groupNormaliseDiffOp struct{ groups int }

func (op groupNormaliseDiffOp) Arity() int { return 2 }
func (op groupNormaliseDiffOp) Type() hm.Type {
	t := G.TensorType{Dims: 4, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t, t)
}
func (op groupNormaliseDiffOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok {
		return nil, fmt.Errorf("models: groupnorm gradient: bad input shape %v", in[0])
	}
	return s.Clone(), nil
}
func (op groupNormaliseDiffOp) Do(in ...G.Value) (G.Value, error) {
	x, err := float32s(in[0])
	if err != nil {
		return nil, err
	}
	g, err := float32s(in[1])
	if err != nil {
		return nil, err
	}
	s := shapeOf(in[0])
	dx := make([]float32, len(x))
	m := len(x) / (s[0] * op.groups)
	for o := 0; o < len(x); o += m {
		mean, inv := groupStats(x[o : o+m])
		var mg, mgx float64
		for i, v := range x[o : o+m] {
			xh := (float64(v) - mean) * inv
			mg += float64(g[o+i])
			mgx += float64(g[o+i]) * xh
		}
		mg /= float64(m)
		mgx /= float64(m)
		for i, v := range x[o : o+m] {
			xh := (float64(v) - mean) * inv
			dx[o+i] = float32(inv * (float64(g[o+i]) - mg - xh*mgx))
		}
	}
	return tensor.New(tensor.WithBacking(dx), tensor.WithShape(s.Clone()...)), nil
}
func (op groupNormaliseDiffOp) ReturnsPtr() bool      { return false }
func (op groupNormaliseDiffOp) CallsExtern() bool     { return false }
func (op groupNormaliseDiffOp) OverwritesInput() int  { return -1 }
func (op groupNormaliseDiffOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op groupNormaliseDiffOp) Hashcode() uint32      { return fnvHash(op.String()) }
func (op groupNormaliseDiffOp) String() string        { return fmt.Sprintf("groupNormaliseDiff%d", op.groups) }
