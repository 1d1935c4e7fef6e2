package graph

import (
	"fmt"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/layer"
	"github.com/dptrain/dptrain/models/internal/core"
	G "gorgonia.org/gorgonia"
)

// traceState is what PerturbedLossesFrom resumes from: outputs[i] is the pre-activation output
// Z of the i-th linear layer (core.Net.Linear), (N·Rows)×Out, and saved[s] the tensor of the
// s-th save op, N×its shape.
type traceState struct {
	outputs, saved [][]float32
}

// resumeInputs builds the inputs of a modeResume graph starting at parameter layer from: the
// layer's pre-activation output as x (a conv layer's turned to NCHW) and an input for each skip
// tensor still saved there. It returns the index of the first op to build after them.
func (e *engine) resumeInputs(g *G.ExprGraph, t *tape, n, from int, toNCHW func(*G.Node, int) (*G.Node, error)) (int, *G.Node, []*G.Node, error) {
	p := e.net
	first := -1
	for oi, o := range p.Ops {
		if (o.Kind == core.OpDense || o.Kind == core.OpConv) && o.Layer == from {
			first = oi
			break
		}
	}
	l := &p.Layers[from]
	if first < 0 {
		return 0, nil, nil, fmt.Errorf("models: %s is not a dense or conv op of the forward pass (a shortcut projection): a pass cannot resume from it", l.Name)
	}
	var shapes [][]int // every save op's shape, in order
	for _, o := range p.Ops[:first] {
		switch o.Kind {
		case core.OpSave:
			t.live = append(t.live, len(shapes))
			shapes = append(shapes, o.Out)
		case core.OpAddSave:
			t.live = t.live[:len(t.live)-1]
		case core.OpGN:
			return 0, nil, nil, fmt.Errorf("models: %s has GroupNorm before %s: a pass can resume only through dense, conv, pooling and activation layers", e.net.Name, l.Name)
		}
	}
	stack := make([]*G.Node, len(t.live))
	t.saved = make([][]float32, len(t.live))
	for i, s := range t.live {
		t.saved[i] = make([]float32, n*core.Prod(shapes[s]))
		stack[i] = inputNode(g, fmt.Sprintf("saved%d", s), t.saved[i], append([]int{n}, shapes[s]...)...)
	}
	t.x = make([]float32, n*l.Rows()*l.K)
	h := inputNode(g, l.Name+".Z", t.x, n*l.Rows(), l.K)
	if l.Kind == core.KindConv {
		var err error
		if h, err = toNCHW(h, from); err != nil {
			return 0, nil, nil, err
		}
	}
	return first + 1, h, stack, nil
}

// forwardChunk runs the chunk of b at start in mode md and writes its examples' losses into
// loss[start:].
func (e *engine) forwardChunk(b data.Batch, start int, md mode, loss []float64) (*tape, int, error) {
	var s data.Stats
	t, m, err := e.pass(b, start, md, &s, nil)
	if err != nil {
		return nil, 0, err
	}
	return t, m, e.chunkLosses(t, b, start, m, loss)
}

// chunkLosses writes the losses of t's samples [start, start+m) of b into loss[start:]. A
// non-finite loss is written as it is, not an error: whether a pass fails must not depend on
// one example, and the caller's per-example function clips that example's contribution to zero.
func (e *engine) chunkLosses(t *tape, b data.Batch, start, m int, loss []float64) error {
	c := e.net.Classes
	for i := 0; i < m; i++ {
		loss[start+i] = exampleLoss(t.logits[i*c:(i+1)*c], int(b.Y[start+i]))
	}
	return nil
}

// exampleLoss is the softmax cross-entropy of one logit row for label y, in float64.
func exampleLoss(row []float32, y int) float64 {
	return core.LogSumExp(row) - float64(row[y])
}

// addPerturbation adds the noise of samples [start, start+m) to t's pre-activation inputs E,
// already filled with the biases.
func (e *engine) addPerturbation(t *tape, start, m int) {
	for j, z := range t.perturb {
		if z == nil {
			continue
		}
		l := &e.net.Layers[j]
		w := l.Rows() * l.K
		for i, v := range z[start*w : (start+m)*w] {
			t.e[j][i] += v
		}
	}
}

// Trace runs the network forward on b without gradients and returns per-example losses and
// every dense/conv layer's input (models.Network.Trace, which refuses networks the estimators
// do not cover).
func (e *engine) Trace(b data.Batch) (layer.Trace, error) {
	lin, idx := e.net.Linear, e.net.LinearIndex
	st := &traceState{outputs: make([][]float32, len(lin))}
	tr := layer.Trace{Loss: make([]float64, b.N), Inputs: make([][]float32, len(lin)), Resume: st}
	for i, l := range lin {
		tr.Inputs[i] = make([]float32, b.N*l.Geometry.Rows*l.Geometry.In)
		st.outputs[i] = make([]float32, b.N*l.Geometry.Rows*l.Geometry.Out)
	}
	for start := 0; start < b.N; {
		t, m, err := e.forwardChunk(b, start, modeTrace, tr.Loss)
		if err != nil {
			return layer.Trace{}, err
		}
		for i, l := range lin {
			w := l.Geometry.Rows * l.Geometry.In
			copy(tr.Inputs[i][start*w:(start+m)*w], t.a[idx[i]][:m*w])
			w = l.Geometry.Rows * l.Geometry.Out
			copy(st.outputs[i][start*w:(start+m)*w], t.z[idx[i]][:m*w])
		}
		if st.saved == nil {
			st.saved = make([][]float32, len(t.saved))
			for s, v := range t.saved {
				st.saved[s] = make([]float32, b.N*(len(v)/t.n))
			}
		}
		for s, v := range t.saved {
			w := len(v) / t.n
			copy(st.saved[s][start*w:(start+m)*w], v[:m*w])
		}
		start += m
	}
	return tr, nil
}

// PerturbedLossesFrom writes into loss each example's softmax cross-entropy of a forward pass
// with noise ((N·Rows)×Out row-major, or nil for none) added to the pre-activation output of
// the linear layer layer only, resuming from tr = Trace(b): the layers before it are not
// recomputed (their output is tr's, as are the skip tensors saved before it), which is what
// Algorithm 1 of Feng et al. needs, one layer's noise at a time. It equals PerturbedLosses with
// noise on that layer alone up to float32 rounding ((AW + b) + z instead of AW + (b + z)).
func (e *engine) PerturbedLossesFrom(b data.Batch, tr layer.Trace, layer int, noise []float32, loss []float64) error {
	lin := e.net.Linear
	l := lin[layer]
	w := l.Geometry.Rows * l.Geometry.Out
	st, _ := tr.Resume.(*traceState)
	if st == nil || len(st.outputs) != len(lin) || len(st.outputs[layer]) != b.N*w || len(tr.Loss) != b.N {
		return fmt.Errorf("models: the trace is not of this %d-example batch on this network: call Trace(b) first", b.N)
	}
	if noise != nil && len(noise) != b.N*w {
		return fmt.Errorf("models: noise for layer %s has %d values, want N·rows·out = %d", l.Name, len(noise), b.N*w)
	}
	if len(loss) < b.N {
		return fmt.Errorf("models: %d losses for %d examples", len(loss), b.N)
	}
	for start := 0; start < b.N; {
		m := min(e.net.Chunk, b.N-start)
		t, err := e.tapeFrom(e.bucket(m), modeResume, e.net.LinearIndex[layer])
		if err != nil {
			return err
		}
		copy(t.x, st.outputs[layer][start*w:(start+m)*w])
		clear(t.x[m*w:])
		if noise != nil {
			for i, v := range noise[start*w : (start+m)*w] {
				t.x[i] += v
			}
		}
		for i, s := range t.live {
			sw := len(t.saved[i]) / t.n
			copy(t.saved[i], st.saved[s][start*sw:(start+m)*sw])
			clear(t.saved[i][m*sw:])
		}
		if err := e.runLoaded(t, start, m); err != nil {
			return err
		}
		if err := e.chunkLosses(t, b, start, m, loss); err != nil {
			return err
		}
		start += m
	}
	return nil
}

// PerturbedLosses runs the network forward on b with noise[i] ((N·Rows)×Out row-major, or nil
// for none) added to the pre-activation output of the i-th linear layer, and writes each
// example's softmax cross-entropy into loss (models.Network.PerturbedLosses, which checks the
// noise's sizes).
func (e *engine) PerturbedLosses(b data.Batch, noise [][]float32, loss []float64) error {
	perturb := make([][]float32, len(e.net.Layers))
	for i, z := range noise {
		if z != nil {
			perturb[e.net.LinearIndex[i]] = z
		}
	}
	for start := 0; start < b.N; {
		t, err := e.tape(e.bucket(min(e.net.Chunk, b.N-start)), modeForward)
		if err != nil {
			return err
		}
		t.perturb = perturb
		_, m, err := e.forwardChunk(b, start, modeForward, loss)
		t.perturb = nil
		if err != nil {
			return err
		}
		start += m
	}
	return nil
}
