package models

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/dptrain/dptrain/internal/kernels"
)

// Network is a Model built from a Spec: a gorgonia graph per batch-size bucket (graph shapes
// are static), compiled lazily and reused, over one flat parameter vector.
//
// Batches larger than the spec's Chunk are processed in chunks of at most Chunk samples, so
// memory does not grow with the batch size; a chunk of m samples runs on the graph for the
// smallest bucket ≥ m (buckets are multiples of Chunk/8), padded with rows whose loss has
// weight zero. Per-sample quantities never mix samples, so chunking changes no result.
//
// A Network is not safe for concurrent use.
type Network struct {
	spec   Spec
	res    resolved
	plan   *plan
	params []float32
	inDim  int

	tapes map[tapeKey]*tape
	dr    *direct // the direct executor (direct.go), nil when the graph runs every pass

	sq      []float64 // per-sample squared norms of a chunk
	scale   []float32 // per-sample clip factors of a chunk
	sample  []float32 // one sample's gradient (PerSampleGradSum)
	scratch []float32 // per-sample conv gradients, column sums
	norm64  []float64 // Gram matrices and their inputs in float64 (squaredNorms)
	ws      wsState   // standardised conv weights for the graph's ghost path (ws.go)
}

type tapeKey struct {
	n    int
	m    mode
	from int // modeResume: the parameter layer the graph starts at
}

var _ Model = (*Network)(nil)

// New builds the network that spec describes and initialises its parameters from rng: weights
// followed by relu or gelu with He et al. (2015) normal N(0, 2/fan_in), other weights with
// Glorot & Bengio (2010) uniform U(±√(6/(fan_in+fan_out))), biases and GroupNorm shifts 0,
// GroupNorm scales 1.
func New(spec Spec, rng *rand.Rand) (*Network, error) {
	if rng == nil {
		return nil, errors.New("models: New needs a *rand.Rand for initialisation")
	}
	nw, err := newUninitialised(spec)
	if err != nil {
		return nil, err
	}
	nw.initParams(rng)
	return nw, nil
}

func newUninitialised(spec Spec) (*Network, error) {
	r, err := spec.resolve()
	if err != nil {
		return nil, err
	}
	p, err := makePlan(r)
	if err != nil {
		return nil, err
	}
	nw := &Network{spec: spec, res: r, plan: p, params: make([]float32, p.nparam),
		inDim: prod(r.input), tapes: make(map[tapeKey]*tape)}
	// Compile the smallest training graph now, so that a spec gorgonia cannot build fails here.
	if _, err := nw.tape(nw.bucket(1), modeGhost); err != nil {
		return nil, err
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
// when they run on it with the convolutions on oneDNN, "graph" when they run on the gorgonia
// graph (see Spec.Engine).
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

// Params aliases the parameter storage the graphs read.
func (nw *Network) Params() []float32 { return nw.params }

// Layout describes the parameter tensors inside Params, in order.
func (nw *Network) Layout() []ParamInfo {
	out := make([]ParamInfo, len(nw.plan.layout))
	for i, pi := range nw.plan.layout {
		pi.Shape = append([]int(nil), pi.Shape...)
		out[i] = pi
	}
	return out
}

// Chunk is the largest number of samples one graph run processes.
func (nw *Network) Chunk() int { return nw.res.chunk }

// bucket is the number of rows a graph run over m samples uses: always the chunk, padded
// rows masked out. A run's shape must not depend on how many samples it holds: BLAS kernels
// (OpenBLAS's among them) choose their blocking, and so each row's summation order, from the
// matrix shape, and under cancellation that rounding moves one sample's gradient when another
// sample joins or leaves the batch (measured: 0.1% of the clip norm on an MLP whose
// pre-activations cancel). With a fixed shape a sample's result depends on itself alone.
func (nw *Network) bucket(int) int { return nw.res.chunk }

func (nw *Network) tape(n int, m mode) (*tape, error) {
	return nw.tapeFrom(n, m, 0)
}

// tapeFrom is tape with the start layer of a modeResume graph.
func (nw *Network) tapeFrom(n int, m mode, from int) (*tape, error) {
	k := tapeKey{n, m, from}
	if t, ok := nw.tapes[k]; ok {
		return t, nil
	}
	t, err := nw.build(n, m, from)
	if err != nil {
		return nil, err
	}
	nw.tapes[k] = t
	return t, nil
}

func (nw *Network) checkBatch(b Batch) error {
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

// run loads samples [start, start+m) of b into t (padding the rest with zero rows of zero
// loss weight), refreshes the broadcast parameter inputs, and runs the graph.
func (nw *Network) run(t *tape, b Batch, start, m int) error {
	d := nw.inDim
	copy(t.x, b.X[start*d:(start+m)*d])
	clear(t.x[m*d:])
	if t.t != nil {
		c := nw.res.classes
		clear(t.t)
		for i := 0; i < m; i++ {
			t.t[i*c+int(b.Y[start+i])] = 1
		}
	}
	return nw.runLoaded(t, start, m)
}

// runLoaded refreshes t's broadcast parameter inputs, adds t's perturbation of samples
// [start, start+m) and runs the graph on the inputs already loaded.
func (nw *Network) runLoaded(t *tape, start, m int) error {
	if t.mode != modeRef {
		for j := range nw.plan.layers {
			l := &nw.plan.layers[j]
			switch l.kind {
			case kindDense, kindConv:
				if l.b < 0 {
					// No bias: E is zero, and must be reset, since addPerturbation adds the
					// noise of a perturbed pass into it.
					clear(t.e[j])
					continue
				}
				bias := nw.params[l.b : l.b+l.k]
				for r := 0; r < len(t.e[j]); r += l.k {
					copy(t.e[j][r:r+l.k], bias)
				}
			case kindGN:
				for i := 0; i < t.n; i++ {
					for c := 0; c < l.c; c++ {
						o := (i*l.c + c) * l.hw
						fill(t.e[j][o:o+l.hw], nw.params[l.w+c])
						fill(t.e2[j][o:o+l.hw], nw.params[l.b+c])
					}
				}
			}
		}
	}
	nw.addPerturbation(t, start, m)
	defer t.vm.Reset()
	if err := t.vm.RunAll(); err != nil {
		return fmt.Errorf("models: running %s on %d samples: %w", nw.res.name, t.n, err)
	}
	return nil
}

func fill(s []float32, v float32) {
	for i := range s {
		s[i] = v
	}
}

// logitStats adds the softmax cross-entropy (computed in float64 from the logits) and the
// arg-max accuracy of samples [start, start+m) to s, and their predictions to pred if non-nil.
func (nw *Network) logitStats(t *tape, b Batch, start, m int, s *Stats, pred []int32) {
	c := nw.res.classes
	for i := 0; i < m; i++ {
		y := -1
		if b.Y != nil {
			y = int(b.Y[start+i])
		}
		best := scoreRow(t.logits[i*c:(i+1)*c], y, s)
		if pred != nil {
			pred[start+i] = int32(best)
		}
	}
	s.N += m
}

// scoreRow returns the arg-max of a row of logits and, for a label y ≥ 0, adds the row's
// softmax cross-entropy (in float64) to s.Loss and counts a correct arg-max in s.Correct.
func scoreRow(row []float32, y int, s *Stats) int {
	best := 0
	mx := float64(row[0])
	for k, v := range row {
		if float64(v) > mx {
			mx, best = float64(v), k
		}
	}
	if y >= 0 {
		var se float64
		for _, v := range row {
			se += math.Exp(float64(v) - mx)
		}
		s.Loss += mx + math.Log(se) - float64(row[y])
		if best == y {
			s.Correct++
		}
	}
	return best
}

// Evaluate computes the summed loss and the accuracy of b without gradients.
func (nw *Network) Evaluate(b Batch) (Stats, error) {
	var s Stats
	if err := nw.checkBatch(b); err != nil {
		return s, err
	}
	if nw.dr != nil {
		return nw.dr.run(b, nil, 0, false, nil, nil)
	}
	for start := 0; start < b.N; start += nw.res.chunk {
		if _, _, err := nw.pass(b, start, modeForward, &s, nil); err != nil {
			return Stats{}, err
		}
	}
	return s, nil
}

// Predict writes the arg-max class of each of the b.N examples into pred; b.Y is not used.
func (nw *Network) Predict(b Batch, pred []int32) error {
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
	var s Stats
	for start := 0; start < b.N; start += nw.res.chunk {
		if _, _, err := nw.pass(b, start, modeForward, &s, pred); err != nil {
			return err
		}
	}
	return nil
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
func (nw *Network) ClippedGradSum(b Batch, clip float64, grad []float32, norms []float64) (Stats, error) {
	var s Stats
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
	nw.ws.refresh(nw.plan, nw.params)
	clear(grad)
	for start := 0; start < b.N; start += nw.res.chunk {
		t, m, err := nw.pass(b, start, modeGhost, &s, nil)
		if err != nil {
			return Stats{}, err
		}
		nw.scale = kernels.Grow(nw.scale, m)
		scale := nw.scale[:m]
		fill(scale, 1)
		if needNorms {
			nw.sq = kernels.GrowF64(nw.sq, m)
			sq := nw.sq[:m]
			clear(sq)
			if err := nw.ghostSquaredNorms(t, m, sq); err != nil {
				return Stats{}, err
			}
			for i, v := range sq {
				norm := math.Sqrt(v)
				if norms != nil {
					norms[start+i] = norm
				}
				f, clipped, bad := ClipScale(clip, norm)
				scale[i] = f
				if clipped {
					s.Clipped++
				}
				if bad {
					s.NonFinite++
				}
			}
		}
		if err := nw.ghostScaledSum(t, m, scale, grad); err != nil {
			return Stats{}, err
		}
	}
	return s, nil
}

// PerSampleGradSum materialises each sample's gradient g_i in turn (one parameter-sized
// buffer), calls f(i, g_i), which may modify g_i in place, and writes Σ_i f(g_i) into grad (it
// overwrites grad). The g_i are assembled from one batched forward/backward pass: a_i g_iᵀ for
// dense layers, P_iᵀ G_i for conv layers, sums over positions for GroupNorm. f may be nil. On
// the direct executor f is called from several goroutines at once (for different i, each with
// its own g_i), so it must be safe for concurrent use; the sum does not depend on the order.
// A g_i with a NaN or infinite coordinate is not passed to f, contributes nothing to grad and
// is counted in Stats.NonFinite (operator-only), not reported as an error.
func (nw *Network) PerSampleGradSum(b Batch, f func(i int, g []float32), grad []float32) (Stats, error) {
	var s Stats
	if err := nw.checkBatch(b); err != nil {
		return s, err
	}
	if err := nw.checkGrad(grad); err != nil {
		return s, err
	}
	if nw.dr != nil {
		return nw.dr.perSample(b, f, grad)
	}
	nw.ws.refresh(nw.plan, nw.params)
	clear(grad)
	nw.sample = kernels.Grow(nw.sample, len(nw.params))
	g := nw.sample[:len(nw.params)]
	for start := 0; start < b.N; start += nw.res.chunk {
		t, m, err := nw.pass(b, start, modeGhost, &s, nil)
		if err != nil {
			return Stats{}, err
		}
		for i := 0; i < m; i++ {
			nw.sampleGrad(t, i, g)
			if sq := sumSq(g); math.IsNaN(sq) || math.IsInf(sq, 0) {
				s.NonFinite++ // clipped to zero
				continue
			}
			if f != nil {
				f(start+i, g)
			}
			for k, v := range g {
				grad[k] += v
			}
		}
	}
	return s, nil
}

// ReferenceGrad writes into g the gradient of one example's loss computed by gorgonia's own
// reverse-mode differentiation with respect to the parameter nodes (biases and GroupNorm's
// affine parameters broadcast the ordinary way), and returns the loss. It shares no arithmetic
// with ClippedGradSum or PerSampleGradSum and exists to test them; it is slow.
func (nw *Network) ReferenceGrad(x []float32, y int32, g []float32) (float64, error) {
	b := Batch{X: x, Y: []int32{y}, N: 1}
	if err := nw.checkBatch(b); err != nil {
		return 0, err
	}
	if err := nw.checkGrad(g); err != nil {
		return 0, err
	}
	t, err := nw.tape(1, modeRef)
	if err != nil {
		return 0, err
	}
	if err := nw.run(t, b, 0, 1); err != nil {
		return 0, err
	}
	var s Stats
	nw.logitStats(t, b, 0, 1, &s, nil)
	copy(g, t.grad)
	return s.Loss, nil
}

// pass runs the graph in mode on the chunk of b that starts at start (at most one chunk of
// samples, padded to its size bucket), adds the chunk's loss and accuracy to s and, when pred is
// not nil, its predictions; it returns the tape holding the chunk's values and the chunk's size.
func (nw *Network) pass(b Batch, start int, md mode, s *Stats, pred []int32) (*tape, int, error) {
	m := min(nw.res.chunk, b.N-start)
	t, err := nw.tape(nw.bucket(m), md)
	if err != nil {
		return nil, 0, err
	}
	if err := nw.run(t, b, start, m); err != nil {
		return nil, 0, err
	}
	nw.logitStats(t, b, start, m, s, pred)
	return t, m, nil
}
