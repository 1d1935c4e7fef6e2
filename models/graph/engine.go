package graph

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/kernels"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/internal/core"
)

// New builds the network that spec describes, as models.New does, with the graph engine: its
// passes run on the graph where the direct executor does not run them (gelu, engine graph),
// and it has the forward-only traces and the reference gradient.
func New(spec models.Spec, rng *rand.Rand) (*models.Network, error) {
	return models.New(spec, rng, models.WithGraph(build))
}

// ReadParams reads a parameter file (models.ReadParams) and builds its network with the graph
// engine.
func ReadParams(r io.Reader) (*models.Network, error) {
	return models.ReadParams(r, models.WithGraph(build))
}

// Load reads the network saved at path (models.Load) with the graph engine.
func Load(path string) (*models.Network, error) {
	return models.Load(path, models.WithGraph(build))
}

// engine is a network's graph engine (models.Graph): one compiled tape per batch-size bucket
// and mode, built lazily and reused, over the network's parameters, and the buffers of its
// ghost-clipping path.
type engine struct {
	net   *core.Net
	inDim int
	tapes map[tapeKey]*tape

	sq      []float64 // per-sample squared norms of a chunk
	scale   []float32 // per-sample clip factors of a chunk
	sample  []float32 // one sample's gradient (PerSampleGradSum)
	scratch []float32 // per-sample conv gradients, column sums
	norm64  []float64 // Gram matrices and their inputs in float64 (squaredNorms)
	ws      wsState   // standardised conv weights for the ghost path (ws.go)
}

// build is the engine for net. It compiles the smallest training graph at once, so that a
// network gorgonia cannot build fails when it is built.
func build(net *core.Net) (models.Graph, error) {
	e := &engine{net: net, inDim: core.Prod(net.Input), tapes: make(map[tapeKey]*tape)}
	if _, err := e.tape(e.bucket(1), modeGhost); err != nil {
		return nil, err
	}
	return e, nil
}

type tapeKey struct {
	n    int
	m    mode
	from int // modeResume: the parameter layer the graph starts at
}

// bucket is the number of rows a graph run over m samples uses: always the chunk, padded
// rows masked out. A run's shape must not depend on how many samples it holds: BLAS kernels
// (OpenBLAS's among them) choose their blocking, and so each row's summation order, from the
// matrix shape, and under cancellation that rounding moves one sample's gradient when another
// sample joins or leaves the batch (measured: 0.1% of the clip norm on an MLP whose
// pre-activations cancel). With a fixed shape a sample's result depends on itself alone.
func (e *engine) bucket(int) int { return e.net.Chunk }

func (e *engine) tape(n int, m mode) (*tape, error) {
	return e.tapeFrom(n, m, 0)
}

// tapeFrom is tape with the start layer of a modeResume graph.
func (e *engine) tapeFrom(n int, m mode, from int) (*tape, error) {
	k := tapeKey{n, m, from}
	if t, ok := e.tapes[k]; ok {
		return t, nil
	}
	t, err := e.build(n, m, from)
	if err != nil {
		return nil, err
	}
	e.tapes[k] = t
	return t, nil
}

// run loads samples [start, start+m) of b into t (padding the rest with zero rows of zero
// loss weight), refreshes the broadcast parameter inputs, and runs the graph.
func (e *engine) run(t *tape, b data.Batch, start, m int) error {
	d := e.inDim
	copy(t.x, b.X[start*d:(start+m)*d])
	clear(t.x[m*d:])
	if t.t != nil {
		c := e.net.Classes
		clear(t.t)
		for i := 0; i < m; i++ {
			t.t[i*c+int(b.Y[start+i])] = 1
		}
	}
	return e.runLoaded(t, start, m)
}

// runLoaded refreshes t's broadcast parameter inputs, adds t's perturbation of samples
// [start, start+m) and runs the graph on the inputs already loaded.
func (e *engine) runLoaded(t *tape, start, m int) error {
	if t.mode != modeRef {
		for j := range e.net.Layers {
			l := &e.net.Layers[j]
			switch l.Kind {
			case core.KindDense, core.KindConv:
				if l.B < 0 {
					// No bias: E is zero, and must be reset, since addPerturbation adds the
					// noise of a perturbed pass into it.
					clear(t.e[j])
					continue
				}
				bias := e.net.Params[l.B : l.B+l.K]
				for r := 0; r < len(t.e[j]); r += l.K {
					copy(t.e[j][r:r+l.K], bias)
				}
			case core.KindGN:
				for i := 0; i < t.n; i++ {
					for c := 0; c < l.C; c++ {
						o := (i*l.C + c) * l.HW
						fill(t.e[j][o:o+l.HW], e.net.Params[l.W+c])
						fill(t.e2[j][o:o+l.HW], e.net.Params[l.B+c])
					}
				}
			}
		}
	}
	e.addPerturbation(t, start, m)
	defer t.vm.Reset()
	if err := t.vm.RunAll(); err != nil {
		return fmt.Errorf("models: running %s on %d samples: %w", e.net.Name, t.n, err)
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
func (e *engine) logitStats(t *tape, b data.Batch, start, m int, s *data.Stats, pred []int32) {
	c := e.net.Classes
	for i := 0; i < m; i++ {
		y := -1
		if b.Y != nil {
			y = int(b.Y[start+i])
		}
		best := core.ScoreRow(t.logits[i*c:(i+1)*c], y, s)
		if pred != nil {
			pred[start+i] = int32(best)
		}
	}
	s.N += m
}

// pass runs the graph in mode on the chunk of b that starts at start (at most one chunk of
// samples, padded to its size bucket), adds the chunk's loss and accuracy to s and, when pred is
// not nil, its predictions; it returns the tape holding the chunk's values and the chunk's size.
func (e *engine) pass(b data.Batch, start int, md mode, s *data.Stats, pred []int32) (*tape, int, error) {
	m := min(e.net.Chunk, b.N-start)
	t, err := e.tape(e.bucket(m), md)
	if err != nil {
		return nil, 0, err
	}
	if err := e.run(t, b, start, m); err != nil {
		return nil, 0, err
	}
	e.logitStats(t, b, start, m, s, pred)
	return t, m, nil
}

// Evaluate adds the loss and accuracy of b to a Stats and, when pred is not nil, writes the
// examples' predictions into it.
func (e *engine) Evaluate(b data.Batch, pred []int32) (data.Stats, error) {
	var s data.Stats
	for start := 0; start < b.N; start += e.net.Chunk {
		if _, _, err := e.pass(b, start, modeForward, &s, pred); err != nil {
			return data.Stats{}, err
		}
	}
	return s, nil
}

// ClippedGradSum is models.Network.ClippedGradSum on the graph, by ghost clipping: no
// per-sample gradient is materialised for dense layers and GroupNorm; conv layers compute each
// sample's norm by the Gram identity or by materialising one sample's weight gradient at a
// time, whichever costs less (ghost.go). needNorms says whether norms are computed at all.
func (e *engine) ClippedGradSum(b data.Batch, clip float64, needNorms bool, grad []float32, norms []float64) (data.Stats, error) {
	var s data.Stats
	e.ws.refresh(e.net)
	clear(grad)
	for start := 0; start < b.N; start += e.net.Chunk {
		t, m, err := e.pass(b, start, modeGhost, &s, nil)
		if err != nil {
			return data.Stats{}, err
		}
		e.scale = kernels.Grow(e.scale, m)
		scale := e.scale[:m]
		fill(scale, 1)
		if needNorms {
			e.sq = kernels.GrowF64(e.sq, m)
			sq := e.sq[:m]
			clear(sq)
			if err := e.ghostSquaredNorms(t, m, sq); err != nil {
				return data.Stats{}, err
			}
			for i, v := range sq {
				norm := math.Sqrt(v)
				if norms != nil {
					norms[start+i] = norm
				}
				f, clipped, bad := kernels.ClipScale(clip, norm)
				scale[i] = f
				if clipped {
					s.Clipped++
				}
				if bad {
					s.NonFinite++
				}
			}
		}
		if err := e.ghostScaledSum(t, m, scale, grad); err != nil {
			return data.Stats{}, err
		}
	}
	return s, nil
}

// PerSampleGradSum is models.Network.PerSampleGradSum on the graph: each g_i is assembled from
// one batched forward and backward pass (a_i g_iᵀ for dense layers, P_iᵀ G_i for conv layers,
// sums over positions for GroupNorm), on one goroutine.
func (e *engine) PerSampleGradSum(b data.Batch, f func(i int, g []float32), grad []float32) (data.Stats, error) {
	var s data.Stats
	e.ws.refresh(e.net)
	clear(grad)
	e.sample = kernels.Grow(e.sample, len(e.net.Params))
	g := e.sample[:len(e.net.Params)]
	for start := 0; start < b.N; start += e.net.Chunk {
		t, m, err := e.pass(b, start, modeGhost, &s, nil)
		if err != nil {
			return data.Stats{}, err
		}
		for i := 0; i < m; i++ {
			e.sampleGrad(t, i, g)
			if sq := kernels.SumSquares(g); math.IsNaN(sq) || math.IsInf(sq, 0) {
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

// ReferenceGrad writes into g the gradient of the loss of b's one example computed by
// gorgonia's own reverse-mode differentiation with respect to the parameter nodes (biases and
// GroupNorm's affine parameters broadcast the ordinary way), and returns the loss. It shares no
// arithmetic with ClippedGradSum or PerSampleGradSum and exists to test them; it is slow.
func (e *engine) ReferenceGrad(b data.Batch, g []float32) (float64, error) {
	t, err := e.tape(1, modeRef)
	if err != nil {
		return 0, err
	}
	if err := e.run(t, b, 0, 1); err != nil {
		return 0, err
	}
	var s data.Stats
	e.logitStats(t, b, 0, 1, &s, nil)
	copy(g, t.grad)
	return s.Loss, nil
}
