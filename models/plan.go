package models

import (
	"fmt"
	"slices"

	"github.com/dptrain/dptrain/layer"
	"github.com/dptrain/dptrain/models/internal/core"
)

// The steps of a network's forward computation (core.OpKind, which the graph engine reads
// too).
const (
	opDense   = core.OpDense
	opConv    = core.OpConv
	opGN      = core.OpGN
	opMaxPool = core.OpMaxPool
	opAvgPool = core.OpAvgPool
	opFlatten = core.OpFlatten
	opAct     = core.OpAct
	opGAP     = core.OpGAP
	opSave    = core.OpSave
	opAddSave = core.OpAddSave
)

// The kinds of a layer with parameters (core.LayerKind).
const (
	kindDense = core.KindDense
	kindConv  = core.KindConv
	kindGN    = core.KindGN
)

// pLayer is a layer with parameters and its place in the flat parameter vector.
type pLayer struct {
	kind core.LayerKind
	name string
	// dense and conv: W is d×k row-major at offset w (conv: d = C·kh·kw with index
	// c·kh·kw + r·kw + s, the order of gorgonia's Im2Col); bias at offset b, or b = -1.
	d, k, w, b int
	// conv geometry: input C×H×W, kernel kh×kw, stride, padding; output oh×ow.
	c, h, wd, kh, kw, stride, pad, oh, ow int
	// GroupNorm over C channels of hw positions in groups; scale at w, shift at b.
	groups, hw int
	he         bool // He initialisation (followed by relu/gelu); Glorot otherwise
	ws         bool // conv: weights standardised in the forward pass (core.Standardise)
}

// rows is the number of rows a sample contributes to the layer's A and G matrices.
func (l *pLayer) rows() int {
	if l.kind == kindConv {
		return l.oh * l.ow
	}
	return 1
}

// plan is a resolved spec laid out: the forward ops, the parameter layers and the parameter
// vector's layout.
type plan struct {
	ops    []core.Op
	layers []pLayer
	layout []layer.Param
	nparam int
}

// hasConv reports whether the plan has a conv layer.
func (p *plan) hasConv() bool {
	for i := range p.layers {
		if p.layers[i].kind == kindConv {
			return true
		}
	}
	return false
}

func makePlan(r resolved) (*plan, error) {
	p := &plan{}
	cur := append([]int(nil), r.input...)
	var saved [][]int // shapes pushed by save layers (identity skips)
	lastW := -1
	param := func(name string, shape []int, bias bool) int {
		off := p.nparam
		size := core.Prod(shape)
		p.layout = append(p.layout, layer.Param{Name: name, Shape: shape, Offset: off, Size: size, Bias: bias})
		p.nparam += size
		return off
	}
	addConv := func(name string, in []int, out, kernel, stride, pad int, bias, he bool) ([]int, int, error) {
		if len(in) != 3 {
			return nil, 0, fmt.Errorf("models: %s needs a C×H×W input, got %v", name, in)
		}
		oh := (in[1]+2*pad-kernel)/stride + 1
		ow := (in[2]+2*pad-kernel)/stride + 1
		if in[1]+2*pad < kernel || in[2]+2*pad < kernel {
			return nil, 0, fmt.Errorf("models: %s kernel %d is larger than its padded input %v", name, kernel, in)
		}
		l := pLayer{kind: kindConv, name: name, d: in[0] * kernel * kernel, k: out,
			c: in[0], h: in[1], wd: in[2], kh: kernel, kw: kernel, stride: stride, pad: pad, oh: oh, ow: ow, b: -1, he: he, ws: r.ws}
		l.w = param(name+".weight", []int{in[0], kernel, kernel, out}, false)
		if bias {
			l.b = param(name+".bias", []int{out}, true)
		}
		p.layers = append(p.layers, l)
		return []int{out, oh, ow}, len(p.layers) - 1, nil
	}
	addGN := func(name string, in []int, groups int) (int, error) {
		if len(in) != 3 {
			return 0, fmt.Errorf("models: %s needs a C×H×W input, got %v", name, in)
		}
		if in[0]%groups != 0 {
			return 0, fmt.Errorf("models: %s: %d groups do not divide %d channels", name, groups, in[0])
		}
		l := pLayer{kind: kindGN, name: name, c: in[0], groups: groups, hw: in[1] * in[2]}
		l.w = param(name+".scale", []int{in[0]}, false)
		l.b = param(name+".shift", []int{in[0]}, true)
		p.layers = append(p.layers, l)
		return len(p.layers) - 1, nil
	}
	for i, ls := range r.layers {
		name := fmt.Sprintf("%s%d", ls.Type, i)
		switch ls.Type {
		case "dense":
			if len(cur) > 1 {
				p.ops = append(p.ops, core.Op{Kind: opFlatten, Out: []int{core.Prod(cur)}})
				cur = []int{core.Prod(cur)}
			}
			l := pLayer{kind: kindDense, name: name, d: cur[0], k: ls.Out, b: -1}
			l.w = param(name+".weight", []int{cur[0], ls.Out}, false)
			if !ls.NoBias {
				l.b = param(name+".bias", []int{ls.Out}, true)
			}
			p.layers = append(p.layers, l)
			lastW = len(p.layers) - 1
			cur = []int{ls.Out}
			p.ops = append(p.ops, core.Op{Kind: opDense, Layer: lastW, Out: cur})
		case "conv2d":
			out, idx, err := addConv(name, cur, ls.Out, ls.Kernel, ls.Stride, ls.Padding, !ls.NoBias, false)
			if err != nil {
				return nil, err
			}
			lastW, cur = idx, out
			p.ops = append(p.ops, core.Op{Kind: opConv, Layer: idx, Out: cur})
		case "groupnorm":
			idx, err := addGN(name, cur, ls.Groups)
			if err != nil {
				return nil, err
			}
			p.ops = append(p.ops, core.Op{Kind: opGN, Layer: idx, Out: cur})
		case "maxpool", "avgpool":
			if len(cur) != 3 {
				return nil, fmt.Errorf("models: layer %d (%s) needs a C×H×W input, got %v", i, ls.Type, cur)
			}
			if cur[1]+2*ls.Padding < ls.Kernel || cur[2]+2*ls.Padding < ls.Kernel {
				return nil, fmt.Errorf("models: layer %d (%s) kernel %d is larger than its input %v", i, ls.Type, ls.Kernel, cur)
			}
			if ls.Padding != 0 {
				return nil, fmt.Errorf("models: layer %d (%s): padded pooling is not supported; set padding 0", i, ls.Type)
			}
			cur = []int{cur[0], (cur[1]-ls.Kernel)/ls.Stride + 1, (cur[2]-ls.Kernel)/ls.Stride + 1}
			k := opMaxPool
			if ls.Type == "avgpool" {
				k = opAvgPool
			}
			p.ops = append(p.ops, core.Op{Kind: k, Kernel: ls.Kernel, Stride: ls.Stride, Out: cur})
		case "flatten":
			cur = []int{core.Prod(cur)}
			p.ops = append(p.ops, core.Op{Kind: opFlatten, Out: cur})
		case "relu", "tanh", "gelu":
			if ls.Type != "tanh" && lastW >= 0 {
				p.layers[lastW].he = true
			}
			p.ops = append(p.ops, core.Op{Kind: opAct, Act: ls.Type, Out: cur})
		case "save":
			saved = append(saved, slices.Clone(cur))
			p.ops = append(p.ops, core.Op{Kind: opSave, Out: cur})
		case "add":
			if len(saved) == 0 {
				return nil, fmt.Errorf("models: layer %d (add) has no saved tensor: put a save layer before it", i)
			}
			if in := saved[len(saved)-1]; !slices.Equal(in, cur) {
				return nil, fmt.Errorf("models: layer %d (add) adds the saved shape %v to %v: an identity skip needs equal shapes", i, in, cur)
			}
			saved = saved[:len(saved)-1]
			p.ops = append(p.ops, core.Op{Kind: opAddSave, Proj: -1, ProjGN: -1, Out: cur})
		case "globalavgpool":
			if len(cur) != 3 {
				return nil, fmt.Errorf("models: layer %d (globalavgpool) needs a C×H×W input, got %v", i, cur)
			}
			cur = []int{cur[0]}
			p.ops = append(p.ops, core.Op{Kind: opGAP, Out: cur})
		case "resblock":
			in := cur
			p.ops = append(p.ops, core.Op{Kind: opSave, Out: cur})
			out, c1, err := addConv(name+".conv1", cur, ls.Out, 3, ls.Stride, 1, false, true)
			if err != nil {
				return nil, err
			}
			p.ops = append(p.ops, core.Op{Kind: opConv, Layer: c1, Out: out})
			g1, err := addGN(name+".gn1", out, ls.Groups)
			if err != nil {
				return nil, err
			}
			p.ops = append(p.ops, core.Op{Kind: opGN, Layer: g1, Out: out}, core.Op{Kind: opAct, Act: "relu", Out: out})
			out, c2, err := addConv(name+".conv2", out, ls.Out, 3, 1, 1, false, true)
			if err != nil {
				return nil, err
			}
			p.ops = append(p.ops, core.Op{Kind: opConv, Layer: c2, Out: out})
			g2, err := addGN(name+".gn2", out, ls.Groups)
			if err != nil {
				return nil, err
			}
			p.ops = append(p.ops, core.Op{Kind: opGN, Layer: g2, Out: out})
			add := core.Op{Kind: opAddSave, Proj: -1, ProjGN: -1, Out: out}
			if in[0] != out[0] || in[1] != out[1] || in[2] != out[2] {
				sout, pc, err := addConv(name+".proj", in, ls.Out, 1, ls.Stride, 0, false, false)
				if err != nil {
					return nil, err
				}
				if sout[1] != out[1] || sout[2] != out[2] {
					return nil, fmt.Errorf("models: layer %d (resblock): shortcut shape %v differs from %v", i, sout, out)
				}
				pg, err := addGN(name+".projgn", sout, ls.Groups)
				if err != nil {
					return nil, err
				}
				add.Proj, add.ProjGN = pc, pg
			}
			p.ops = append(p.ops, add, core.Op{Kind: opAct, Act: "relu", Out: out})
			cur = out
			lastW = -1
		}
		if core.Prod(cur) <= 0 {
			return nil, fmt.Errorf("models: layer %d (%s) produces an empty output %v", i, ls.Type, cur)
		}
	}
	if len(saved) > 0 {
		return nil, fmt.Errorf("models: %d save layers have no matching add layer", len(saved))
	}
	if len(cur) != 1 || cur[0] != r.classes {
		return nil, fmt.Errorf("models: the network's output has shape %v, want [%d]", cur, r.classes)
	}
	return p, nil
}
