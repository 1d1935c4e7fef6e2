package models

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/layer"
	"github.com/dptrain/dptrain/models/internal/core"
)

// Network is a Model built from a Spec, over one flat parameter vector. Its passes run on the
// direct executor (direct.go) or, for what the direct executor does not run (gelu layers,
// engine graph), on a graph engine (Graph, package models/graph), which also provides
// Trace, PerturbedLosses, PerturbedLossesFrom and ReferenceGrad.
//
// Batches larger than the spec's Chunk are processed in chunks of at most Chunk samples, so
// memory does not grow with the batch size. Per-sample quantities never mix samples, so
// chunking changes no result.
//
// A Network is not safe for concurrent use.
type Network struct {
	spec   Spec
	res    resolved
	plan   *plan
	params []float32
	inDim  int

	dr *direct // the direct executor (direct.go), nil when the graph runs every pass
	gr Graph   // the graph engine (WithGraph) when it runs the passes; nil otherwise
	// grLazy builds the graph engine on first use (traces, the reference gradient) where
	// the direct executor runs the passes: compiling a graph costs more than most steps.
	grLazy func() (Graph, error)
}

var _ Model = (*Network)(nil)

// New builds the network that spec describes and initialises its parameters from rng: weights
// followed by relu or gelu with He et al. (2015) normal N(0, 2/fan_in), other weights with
// Glorot & Bengio (2010) uniform U(±√(6/(fan_in+fan_out))), biases and GroupNorm shifts 0,
// GroupNorm scales 1.
//
// Without WithGraph the network has no graph engine: a spec that only the graph runs is an
// error, and Trace, PerturbedLosses, PerturbedLossesFrom and ReferenceGrad fail; package
// models/graph's New builds the network with one.
func New(spec Spec, rng *rand.Rand, opts ...Option) (*Network, error) {
	if rng == nil {
		return nil, errors.New("models: New needs a *rand.Rand for initialisation")
	}
	nw, err := newUninitialised(spec, opts)
	if err != nil {
		return nil, err
	}
	nw.initParams(rng)
	return nw, nil
}

func newUninitialised(spec Spec, opts []Option) (*Network, error) {
	r, err := spec.resolve()
	if err != nil {
		return nil, err
	}
	p, err := makePlan(r)
	if err != nil {
		return nil, err
	}
	nw := &Network{spec: spec, res: r, plan: p, params: make([]float32, p.nparam), inDim: core.Prod(r.input)}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if r.engine != "graph" {
		nw.dr = newDirect(nw)
		if nw.dr == nil && (r.engine == "direct" || r.engine == "dnnl") {
			return nil, fmt.Errorf("models: engine %s cannot run %s (it runs every layer but gelu, on square kernels and square global pooling): use engine auto or graph", r.engine, r.name)
		}
		// Engine auto runs the convolutions on oneDNN where it is built in: faster on every
		// preset with conv layers (docs/benchmarks.md), and each example as alone.
		if r.engine == "dnnl" || r.engine == "auto" && dnnlBuilt && nw.dr != nil && p.hasConv() {
			if nw.dr.dn, err = newDnnlConvs(nw.dr); err != nil {
				return nil, err
			}
		}
	}
	if o.graph != nil {
		if nw.dr == nil {
			if nw.gr, err = o.graph(nw.describe()); err != nil {
				return nil, err
			}
		} else {
			build := o.graph
			nw.grLazy = sync.OnceValues(func() (Graph, error) { return build(nw.describe()) })
		}
	}
	if nw.dr == nil && nw.gr == nil {
		if r.engine == "graph" {
			return nil, fmt.Errorf("models: engine graph runs %s on the graph engine, which only package models/graph builds: use graph.New or graph.Load", r.name)
		}
		return nil, fmt.Errorf("models: the direct executor cannot run %s (it runs every layer but gelu, on square kernels and square global pooling): build it with package models/graph (graph.New or graph.Load), which runs it on the graph", r.name)
	}
	return nw, nil
}

func (nw *Network) initParams(rng *rand.Rand) {
	for _, l := range nw.plan.layers {
		switch l.kind {
		case kindDense, kindConv:
			fanIn, fanOut := l.d, l.k
			if l.kind == kindConv {
				fanOut = l.k * l.kh * l.kw
			}
			w := nw.params[l.w : l.w+l.d*l.k]
			if l.he {
				std := math.Sqrt(2 / float64(fanIn))
				for i := range w {
					w[i] = float32(rng.NormFloat64() * std)
				}
			} else {
				lim := math.Sqrt(6 / float64(fanIn+fanOut))
				for i := range w {
					w[i] = float32((2*rng.Float64() - 1) * lim)
				}
			}
		case kindGN:
			for i := 0; i < l.c; i++ {
				nw.params[l.w+i] = 1
			}
		}
	}
}

// Engine is "direct" when training and evaluation passes run on the direct executor, "dnnl"
// when they run on it with the convolutions on oneDNN, "graph" when they run on the graph
// engine (package models/graph; see Spec.Engine).
func (nw *Network) Engine() string {
	if nw.dr != nil && nw.dr.dn != nil {
		return "dnnl"
	}
	if nw.dr != nil {
		return "direct"
	}
	return "graph"
}

// Spec returns the spec the network was built from.
func (nw *Network) Spec() Spec { return nw.spec }

// SetPreprocessing records how the network's inputs are prepared (see Spec.Preprocessing); it
// is saved with the parameters.
func (nw *Network) SetPreprocessing(p map[string]string) { nw.spec.Preprocessing = p }

// Name is the spec's kind: a preset name, or logreg, mlp, cnn.
func (nw *Network) Name() string { return nw.res.name }

// InputShape is the shape of one example.
func (nw *Network) InputShape() []int { return append([]int(nil), nw.res.input...) }

// Classes is the number of classes.
func (nw *Network) Classes() int { return nw.res.classes }

// Params aliases the parameter storage the engines read.
func (nw *Network) Params() []float32 { return nw.params }

// Layout describes the parameter tensors inside Params, in order.
func (nw *Network) Layout() []layer.Param {
	out := make([]layer.Param, len(nw.plan.layout))
	for i, pi := range nw.plan.layout {
		pi.Shape = append([]int(nil), pi.Shape...)
		out[i] = pi
	}
	return out
}

// Chunk is the largest number of samples one run processes.
func (nw *Network) Chunk() int { return nw.res.chunk }

func (nw *Network) checkBatch(b data.Batch) error {
	if b.N < 0 {
		return fmt.Errorf("models: batch size %d is negative", b.N)
	}
	if len(b.X) < b.N*nw.inDim {
		return fmt.Errorf("models: batch X has %d values, need N·%d = %d", len(b.X), nw.inDim, b.N*nw.inDim)
	}
	if len(b.Y) < b.N {
		return fmt.Errorf("models: batch Y has %d labels, need N = %d", len(b.Y), b.N)
	}
	for i, y := range b.Y[:b.N] {
		if y < 0 || int(y) >= nw.res.classes {
			return fmt.Errorf("models: label %d of sample %d is outside [0, %d)", y, i, nw.res.classes)
		}
	}
	return nil
}

// Evaluate computes the summed loss and the accuracy of b without gradients.
func (nw *Network) Evaluate(b data.Batch) (data.Stats, error) {
	var s data.Stats
	if err := nw.checkBatch(b); err != nil {
		return s, err
	}
	if nw.dr != nil {
		return nw.dr.run(b, nil, 0, false, nil, nil)
	}
	return nw.gr.Evaluate(b, nil)
}

// Predict writes the arg-max class of each of the b.N examples into pred; b.Y is not used.
func (nw *Network) Predict(b data.Batch, pred []int32) error {
	if b.N < 0 || len(b.X) < b.N*nw.inDim {
		return fmt.Errorf("models: batch of %d examples needs %d values in X, has %d", b.N, b.N*nw.inDim, len(b.X))
	}
	if len(pred) < b.N {
		return fmt.Errorf("models: pred has length %d, need %d", len(pred), b.N)
	}
	b.Y = nil
	if nw.dr != nil {
		_, err := nw.dr.run(b, nil, 0, false, nil, pred)
		return err
	}
	_, err := nw.gr.Evaluate(b, pred)
	return err
}

func (nw *Network) checkGrad(grad []float32) error {
	if len(grad) != len(nw.params) {
		return fmt.Errorf("models: grad has length %d, the model has %d parameters", len(grad), len(nw.params))
	}
	return nil
}

// ClippedGradSum writes Σ_i min(1, clip/‖g_i‖₂)·g_i into grad (it overwrites grad), the sum
// of the per-sample gradients clipped in l2 norm (Abadi et al. 2016, Algorithm 1, the clipping
// step). clip = +Inf gives the plain gradient of the summed loss (no norms are computed unless
// norms is non-nil). If norms != nil it receives ‖g_i‖₂ for i < b.N.
//
// No per-sample gradient is materialised for dense layers and GroupNorm; conv layers compute
// each sample's norm by the Gram identity or by materialising one sample's weight gradient at
// a time, whichever costs less (see ghost.go).
//
// The function is total: an example whose gradient norm is NaN or infinite (a NaN or Inf
// input, an overflow) is clipped to zero, contributes nothing to grad, and is counted in
// Stats.NonFinite (operator-only); only misuse (buffer lengths, a non-positive clip) is an
// error. With clip = +Inf this applies whenever norms are computed (norms != nil).
func (nw *Network) ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error) {
	var s data.Stats
	if err := nw.checkBatch(b); err != nil {
		return s, err
	}
	if err := nw.checkGrad(grad); err != nil {
		return s, err
	}
	if math.IsNaN(clip) || clip <= 0 {
		return s, fmt.Errorf("models: clip norm %v must be positive (+Inf for no clipping)", clip)
	}
	if norms != nil && len(norms) < b.N {
		return s, fmt.Errorf("models: norms has length %d, need %d", len(norms), b.N)
	}
	needNorms := norms != nil || !math.IsInf(clip, 1)
	if nw.dr != nil {
		return nw.dr.run(b, grad, clip, needNorms, norms, nil)
	}
	return nw.gr.ClippedGradSum(b, clip, needNorms, grad, norms)
}

// PerSampleGradSum materialises each sample's gradient g_i in turn (one parameter-sized
// buffer), calls f(i, g_i), which may modify g_i in place, and writes Σ_i f(g_i) into grad (it
// overwrites grad). The g_i are assembled from one batched forward/backward pass: a_i g_iᵀ for
// dense layers, P_iᵀ G_i for conv layers, sums over positions for GroupNorm. f may be nil. On
// the direct executor f is called from several goroutines at once (for different i, each with
// its own g_i), so it must be safe for concurrent use; the sum does not depend on the order.
// A g_i with a NaN or infinite coordinate is not passed to f, contributes nothing to grad and
// is counted in Stats.NonFinite (operator-only), not reported as an error.
func (nw *Network) PerSampleGradSum(b data.Batch, f func(i int, g []float32), grad []float32) (data.Stats, error) {
	var s data.Stats
	if err := nw.checkBatch(b); err != nil {
		return s, err
	}
	if err := nw.checkGrad(grad); err != nil {
		return s, err
	}
	if nw.dr != nil {
		return nw.dr.perSample(b, f, grad)
	}
	return nw.gr.PerSampleGradSum(b, f, grad)
}

// ReferenceGrad writes into g the gradient of one example's loss computed by gorgonia's own
// reverse-mode differentiation with respect to the parameter nodes (biases and GroupNorm's
// affine parameters broadcast the ordinary way), and returns the loss. It shares no arithmetic
// with ClippedGradSum or PerSampleGradSum and exists to test them; it is slow. It needs the
// graph engine (WithGraph).
func (nw *Network) ReferenceGrad(x []float32, y int32, g []float32) (float64, error) {
	b := data.Batch{X: x, Y: []int32{y}, N: 1}
	if err := nw.checkBatch(b); err != nil {
		return 0, err
	}
	if err := nw.checkGrad(g); err != nil {
		return 0, err
	}
	gr, err := nw.graph("ReferenceGrad")
	if err != nil {
		return 0, err
	}
	return gr.ReferenceGrad(b, g)
}
