package models

import (
	"fmt"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/layer"
	"github.com/dptrain/dptrain/models/internal/core"
)

// Graph is the graph engine of a Network: package models/graph's gorgonia graphs. It runs the
// passes the direct executor does not run (gelu layers, engine graph), the forward-only passes
// of Trace, PerturbedLosses and PerturbedLossesFrom, and ReferenceGrad, the reference the
// direct executor is tested against. A Network gets one through WithGraph, which
// models/graph's New, ReadParams and Load pass; the Network checks every argument before it
// calls the engine.
type Graph interface {
	// Evaluate returns b's loss and accuracy, and writes its predictions into pred if pred is
	// not nil.
	Evaluate(b data.Batch, pred []int32) (data.Stats, error)
	// ClippedGradSum is Network.ClippedGradSum; needNorms says whether per-example norms are
	// computed (norms != nil or a finite clip).
	ClippedGradSum(b data.Batch, clip float64, needNorms bool, grad []float32, norms []float64) (data.Stats, error)
	PerSampleGradSum(b data.Batch, f func(i int, g []float32), grad []float32) (data.Stats, error)
	// ReferenceGrad is Network.ReferenceGrad on b's one example.
	ReferenceGrad(b data.Batch, g []float32) (float64, error)
	Trace(b data.Batch) (layer.Trace, error)
	PerturbedLosses(b data.Batch, noise [][]float32, loss []float64) error
	PerturbedLossesFrom(b data.Batch, tr layer.Trace, layer int, noise []float32, loss []float64) error
}

// An Option changes how New, ReadParams and Load build a network.
type Option func(*options)

type options struct {
	graph func(*core.Net) (Graph, error)
}

// WithGraph gives the network a graph engine, which build makes from the network's layout
// when the network is built (package models/graph passes its own).
func WithGraph(build func(*core.Net) (Graph, error)) Option {
	return func(o *options) { o.graph = build }
}

// describe lays the network out for the graph engine; the layout's Params alias the network's.
func (nw *Network) describe() *core.Net {
	n := &core.Net{Name: nw.res.name, Input: nw.res.input, Classes: nw.res.classes, Chunk: nw.res.chunk,
		Params: nw.params, Ops: nw.plan.ops, Linear: nw.LinearLayers(), LinearIndex: nw.linearIndices()}
	for _, l := range nw.plan.layers {
		n.Layers = append(n.Layers, core.Layer{Kind: l.kind, Name: l.name, D: l.d, K: l.k, W: l.w, B: l.b,
			C: l.c, KH: l.kh, KW: l.kw, Stride: l.stride, Pad: l.pad, OH: l.oh, OW: l.ow,
			Groups: l.groups, HW: l.hw, WS: l.ws})
	}
	return n
}

// graph returns the network's graph engine, or an error saying that what needs it has none.
func (nw *Network) graph(what string) (Graph, error) {
	if nw.gr == nil && nw.grLazy != nil {
		gr, err := nw.grLazy()
		if err != nil {
			return nil, fmt.Errorf("models: %s needs the graph engine, and building it for %s failed: %w", what, nw.res.name, err)
		}
		return gr, nil
	}
	if nw.gr == nil {
		return nil, fmt.Errorf("models: %s needs the graph engine, and this %s network was built without one: build it with package models/graph (graph.New or graph.Load)", what, nw.res.name)
	}
	return nw.gr, nil
}
