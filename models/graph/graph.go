package graph

import (
	"fmt"

	"github.com/dptrain/dptrain/models/internal/core"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// mode selects what a compiled graph computes.
type mode int

const (
	// modeGhost: forward and backward, reading each parameter layer's input A (im2col
	// patches for conv) and the gradient G of the summed loss with respect to its output.
	modeGhost mode = iota
	// modeForward: logits only.
	modeForward
	// modeRef: gorgonia's own reverse-mode gradient with respect to the parameter nodes,
	// with biases and affine parameters broadcast the ordinary way; the reference path that
	// shares no code with the ghost-clipping arithmetic.
	modeRef
	// modeTrace: forward only, reading each dense/conv layer's input A and pre-activation
	// output Z, and every saved (skip) tensor (forward-only estimators such as DP-ULR's
	// likelihood ratios; see trace.go).
	modeTrace
	// modeResume: forward only from one dense/conv layer's pre-activation output, fed as the
	// input together with the skip tensors saved before it (see trace.go).
	modeResume
)

// tape is one compiled gorgonia graph for batches of exactly n rows, with the buffers its
// inputs are bound to and its outputs are read into. Buffers are allocated once, when the
// graph is built, and reused by every run.
//
// The graph reaches ∂L/∂Z for a layer's pre-activation Z by adding an input node E to Z
// (Z' = Z + E) and differentiating with respect to E (gorgonia's Grad only differentiates
// with respect to input nodes). E is not zero: it holds the layer's bias broadcast over the
// rows, so the same node carries the bias in the forward pass and yields G = ∂L/∂Z in the
// backward pass. GroupNorm's affine parameters are fed the same way, as input tensors S and B
// of the full activation shape holding scale and shift broadcast over samples and positions:
// ∂L/∂S = x̂ ⊙ g and ∂L/∂B = g, whose sums over positions are the per-sample gradients.
type tape struct {
	n      int
	mode   mode
	vm     G.VM
	x      []float32 // n × core.Prod(input), bound to the input node
	t      []float32 // n × classes, mask-weighted one-hot targets (ghost, ref)
	logits []float32 // n × classes, read after the forward pass

	// Indexed by parameter layer (ghost and forward modes).
	e  [][]float32 // dense/conv: E, (n·rows)×k; GN: S, n×C×hw
	e2 [][]float32 // GN: B, n×C×hw
	a  [][]float32 // ghost, dense/conv: A, (n·rows)×d
	gz [][]float32 // ghost: ∂L/∂E, or ∂L/∂S for GN
	g2 [][]float32 // ghost, GN: ∂L/∂B

	grad []float32 // ref: ∂L/∂θ, laid out like the parameters

	// perturb, when set, holds per parameter layer the whole batch's noise to add to the
	// dense/conv pre-activation outputs (see models.Network.PerturbedLosses); nil entries add none.
	perturb [][]float32

	// trace: z[j] is dense/conv layer j's pre-activation output, (n·rows)×k; saved[s] the
	// tensor of the s-th save op. resume: saved[i] is fed to the skip tensor of save op
	// live[i], the saves still on the stack where the graph starts.
	z     [][]float32
	saved [][]float32
	live  []int
}

func inputNode(g *G.ExprGraph, name string, buf []float32, shape ...int) *G.Node {
	return G.NewTensor(g, tensor.Float32, len(shape), G.WithShape(shape...), G.WithName(name),
		G.WithValue(tensor.New(tensor.WithBacking(buf), tensor.WithShape(shape...))))
}

// readInto copies n's value into buf during the run, when it is computed: the tape machine
// reuses the memory of values that are no longer needed, so reading after the run is unsafe.
// It returns the read node: the tape machine runs only what the read nodes need (build).
func readInto(n *G.Node, buf []float32) *G.Node {
	v := new(G.Value)
	*v = tensor.New(tensor.WithBacking(buf), tensor.WithShape(n.Shape().Clone()...))
	return G.Read(n, v)
}

// build compiles the network for batches of n rows. In modeResume the graph starts at the
// pre-activation output of parameter layer from (a dense or conv op), which is its input x.
func (e *engine) build(n int, m mode, from int) (*tape, error) {
	p := e.net
	g := G.NewGraph()
	t := &tape{n: n, mode: m}
	nl := len(p.Layers)
	t.e, t.e2, t.a, t.gz, t.g2 = make([][]float32, nl), make([][]float32, nl), make([][]float32, nl), make([][]float32, nl), make([][]float32, nl)
	var h *G.Node
	if m != modeResume {
		in := append([]int{n}, e.net.Input...)
		t.x = make([]float32, n*e.inDim)
		h = inputNode(g, "x", t.x, in...)
	}
	var (
		wrt    []*G.Node
		wrtBuf [][]float32
		stack  []*G.Node
		reads  []*G.Node // every value the step uses: the machine computes these and their inputs

		err error
	)
	if m == modeRef {
		t.grad = make([]float32, len(p.Params))
	}
	param := func(name string, off, size int, shape ...int) *G.Node {
		node := inputNode(g, name, e.net.Params[off:off+size], shape...)
		if m == modeRef {
			wrt = append(wrt, node)
			wrtBuf = append(wrtBuf, t.grad[off:off+size])
		}
		return node
	}
	// linear applies Z = A·W (+ bias) for a dense layer (A: n×d) or a conv layer's patches
	// (A: n·oh·ow × d).
	linear := func(a *G.Node, j int) (*G.Node, error) {
		l := &p.Layers[j]
		rows := n * l.Rows()
		w := param(l.Name+".weight", l.W, l.D*l.K, l.D, l.K)
		if l.WS {
			// Ŵ in place of W (ws.go); in modeRef gorgonia differentiates through it.
			var err error
			if w, err = G.ApplyOp(wsOp{l.D, l.K}, w); err != nil {
				return nil, fmt.Errorf("models: %s: %w", l.Name, err)
			}
		}
		// One product per example, not one over the chunk: see rowMatMulOp.
		z, err := G.ApplyOp(rowMatMulOp{rows: l.Rows(), out: newOutBuf()}, a, w)
		if err != nil {
			return nil, fmt.Errorf("models: %s: %w", l.Name, err)
		}
		if m == modeRef {
			if l.B < 0 {
				return z, nil
			}
			b := param(l.Name+".bias", l.B, l.K, 1, l.K)
			return G.Auto(G.BroadcastAdd, z, b)
		}
		t.e[j] = make([]float32, rows*l.K)
		e := inputNode(g, l.Name+".E", t.e[j], rows, l.K)
		if m == modeGhost || m == modeTrace {
			t.a[j] = make([]float32, rows*l.D)
			reads = append(reads, readInto(a, t.a[j]))
		}
		if m == modeGhost {
			t.gz[j] = make([]float32, rows*l.K)
			wrt = append(wrt, e)
			wrtBuf = append(wrtBuf, t.gz[j])
		}
		out, err := G.Add(z, e)
		if err == nil && m == modeTrace {
			t.z[j] = make([]float32, rows*l.K)
			reads = append(reads, readInto(out, t.z[j]))
		}
		return out, err
	}
	// toNCHW turns a conv layer's (n·oh·ow)×k output into n×k×oh×ow.
	toNCHW := func(z *G.Node, j int) (*G.Node, error) {
		l := &p.Layers[j]
		z, err := G.Reshape(z, tensor.Shape{n, l.OH, l.OW, l.K})
		if err != nil {
			return nil, fmt.Errorf("models: %s: %w", l.Name, err)
		}
		return G.ApplyOp(nhwcOp{toNCHW: true, out: newOutBuf()}, z)
	}
	conv := func(x *G.Node, j int) (*G.Node, error) {
		l := &p.Layers[j]
		if l.KH != l.KW {
			return nil, fmt.Errorf("models: %s: kernel %d×%d is not square", l.Name, l.KH, l.KW)
		}
		pt, err := G.ApplyOp(patchOp{k: l.KH, s: l.Stride, pad: l.Pad, out: newOutBuf()}, x)
		if err != nil {
			return nil, fmt.Errorf("models: %s: %w", l.Name, err)
		}
		z, err := linear(pt, j)
		if err != nil {
			return nil, err
		}
		return toNCHW(z, j)
	}
	groupNorm := func(x *G.Node, j int) (*G.Node, error) {
		l := &p.Layers[j]
		shape := x.Shape().Clone()
		var s, b *G.Node
		if m == modeRef {
			s = param(l.Name+".scale", l.W, l.C, 1, l.C, 1, 1)
			b = param(l.Name+".shift", l.B, l.C, 1, l.C, 1, 1)
		} else {
			t.e[j] = make([]float32, n*l.C*l.HW)
			t.e2[j] = make([]float32, n*l.C*l.HW)
			s = inputNode(g, l.Name+".S", t.e[j], shape...)
			b = inputNode(g, l.Name+".B", t.e2[j], shape...)
			if m == modeGhost {
				t.gz[j] = make([]float32, n*l.C*l.HW)
				t.g2[j] = make([]float32, n*l.C*l.HW)
				wrt = append(wrt, s, b)
				wrtBuf = append(wrtBuf, t.gz[j], t.g2[j])
			}
		}
		xh, err := normalise(x, l.Groups)
		if err != nil {
			return nil, fmt.Errorf("models: %s: %w", l.Name, err)
		}
		if m == modeRef {
			if xh, err = G.Auto(G.BroadcastHadamardProd, xh, s); err != nil {
				return nil, fmt.Errorf("models: %s: %w", l.Name, err)
			}
			return G.Auto(G.BroadcastAdd, xh, b)
		}
		if xh, err = G.HadamardProd(xh, s); err != nil {
			return nil, fmt.Errorf("models: %s: %w", l.Name, err)
		}
		return G.Add(xh, b)
	}
	first := 0
	if m == modeResume {
		if first, h, stack, err = e.resumeInputs(g, t, n, from, toNCHW); err != nil {
			return nil, err
		}
	}
	if m == modeTrace {
		t.z = make([][]float32, nl)
	}
	for oi := first; oi < len(p.Ops); oi++ {
		o := p.Ops[oi]
		switch o.Kind {
		case core.OpDense:
			h, err = linear(h, o.Layer)
		case core.OpConv:
			h, err = conv(h, o.Layer)
		case core.OpGN:
			h, err = groupNorm(h, o.Layer)
		case core.OpMaxPool:
			h, err = G.ApplyOp(poolOp{pool2d{max: true, k: o.Kernel, s: o.Stride}, newOutBuf(), new(argBuf)}, h)
		case core.OpAvgPool:
			h, err = G.ApplyOp(poolOp{pool2d: pool2d{k: o.Kernel, s: o.Stride}, out: newOutBuf()}, h)
		case core.OpFlatten:
			h, err = G.Reshape(h, tensor.Shape{n, o.Out[0]})
		case core.OpAct:
			h, err = activation(h, o.Act)
		case core.OpGAP:
			s := h.Shape()
			if s[2] != s[3] {
				err = fmt.Errorf("global average pooling needs a square input, got %v", s)
			} else if h, err = G.ApplyOp(poolOp{pool2d: pool2d{k: s[2], s: s[2]}, out: newOutBuf()}, h); err == nil {
				h, err = G.Reshape(h, tensor.Shape{n, s[1]})
			}
		case core.OpSave:
			stack = append(stack, h)
			if m == modeTrace {
				buf := make([]float32, n*core.Prod(o.Out))
				t.saved = append(t.saved, buf)
				reads = append(reads, readInto(h, buf))
			}
		case core.OpAddSave:
			sc := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if o.Proj >= 0 {
				if sc, err = conv(sc, o.Proj); err == nil {
					sc, err = groupNorm(sc, o.ProjGN)
				}
			}
			if err == nil {
				h, err = G.Add(h, sc)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("models: building op %d of %s: %w", oi, e.net.Name, err)
		}
		if got := h.Shape(); o.Kind != core.OpSave && !sameShape(got[1:], o.Out) {
			return nil, fmt.Errorf("models: op %d of %s produces shape %v, planned %v", oi, e.net.Name, got[1:], o.Out)
		}
	}
	t.logits = make([]float32, n*e.net.Classes)
	reads = append(reads, readInto(h, t.logits))
	if m == modeGhost || m == modeRef {
		// Softmax cross-entropy summed over rows; T holds one-hot labels for real rows and
		// zeros for padding rows, so padding contributes exactly zero loss and gradient.
		t.t = make([]float32, n*e.net.Classes)
		tn := inputNode(g, "targets", t.t, n, e.net.Classes)
		logp, err := logSoftmax(h)
		if err != nil {
			return nil, fmt.Errorf("models: loss: %w", err)
		}
		prodNode, err := G.HadamardProd(logp, tn)
		if err != nil {
			return nil, fmt.Errorf("models: loss: %w", err)
		}
		sum, err := G.Sum(prodNode)
		if err != nil {
			return nil, fmt.Errorf("models: loss: %w", err)
		}
		cost, err := G.Neg(sum)
		if err != nil {
			return nil, fmt.Errorf("models: loss: %w", err)
		}
		grads, err := G.Grad(cost, wrt...)
		if err != nil {
			return nil, fmt.Errorf("models: differentiating %s: %w", e.net.Name, err)
		}
		for i, gn := range grads {
			reads = append(reads, readInto(gn, wrtBuf[i]))
		}
	}
	// Only what a read needs is compiled: differentiating Z = A·W with respect to the added
	// input E also creates ∂L/∂W = Aᵀ·∂L/∂Z (weightGradOp), a GEMM per layer that ghost
	// clipping recomputes with its per-example weights (ghost.go) and nothing reads; the
	// subgraph leaves it out.
	t.vm = G.NewTapeMachine(g.ExactSubgraphRoots(reads...))
	return t, nil
}

// normalise is GroupNorm without its affine part (see groupNormaliseOp).
func normalise(x *G.Node, groups int) (*G.Node, error) {
	return G.ApplyOp(groupNormaliseOp{groups}, x)
}

func sameShape(a tensor.Shape, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// activation applies relu, tanh or gelu. gelu uses the tanh form of Hendrycks & Gimpel (2016),
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), since gorgonia has no erf.
func activation(x *G.Node, name string) (*G.Node, error) {
	switch name {
	case "relu", "tanh":
		return G.ApplyOp(actOp{relu: name == "relu", out: newOutBuf()}, x)
	case "gelu":
		c := func(v float32) *G.Node { return G.NewConstant(v) }
		x3, err := G.Cube(x)
		if err != nil {
			return nil, err
		}
		inner, err := G.Mul(x3, c(0.044715))
		if err != nil {
			return nil, err
		}
		if inner, err = G.Add(x, inner); err != nil {
			return nil, err
		}
		if inner, err = G.Mul(inner, c(0.7978845608028654)); err != nil {
			return nil, err
		}
		th, err := G.Tanh(inner)
		if err != nil {
			return nil, err
		}
		if th, err = G.Add(th, c(1)); err != nil {
			return nil, err
		}
		y, err := G.HadamardProd(x, th)
		if err != nil {
			return nil, err
		}
		return G.Mul(y, c(0.5))
	}
	return nil, fmt.Errorf("models: unknown activation %q", name)
}
