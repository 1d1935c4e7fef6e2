package models

import (
	"fmt"

	"github.com/dptrain/dptrain/internal/kernels"

	G "gorgonia.org/gorgonia"
)

// Forward-only access for estimators that never differentiate the network (DP-ULR's
// likelihood-ratio gradients, Feng et al., "Forward Learning with Differential Privacy", Eq. 4): the clean per-example losses with every dense and
// conv layer's input, and per-example losses of a forward pass with given noise added to those
// layers' pre-activation outputs. The model never draws noise: the caller supplies it.

// LinearLayer is a dense or conv layer as a forward-only estimator sees it (kernels.LinearLayer).
type LinearLayer = kernels.LinearLayer

// LinearLayers lists the network's dense and conv layers in forward order, except conv layers
// with standardised weights: their output is A·Ŵ, not A·W with W the parameters as they are, so
// an estimator of ∂ℓ/∂W from the output's sensitivity does not apply to them (ws.go).
func (nw *Network) LinearLayers() []LinearLayer {
	var out []LinearLayer
	for _, j := range nw.linearIndices() {
		l := &nw.plan.layers[j]
		out = append(out, LinearLayer{Name: l.name, Geometry: l.geometry(), Weight: l.w, Bias: l.b})
	}
	return out
}

// linearIndices are the positions in the plan of LinearLayers(), in the same order.
func (nw *Network) linearIndices() []int {
	var out []int
	for j := range nw.plan.layers {
		if l := &nw.plan.layers[j]; (l.kind == kindDense || l.kind == kindConv) && !l.ws {
			out = append(out, j)
		}
	}
	return out
}

// Trace is one clean forward pass over a batch (kernels.Trace): each example's loss and every
// linear layer's input. Its Resume is a *traceState.
type Trace = kernels.Trace

// traceState is what PerturbedLossesFrom resumes from: outputs[i] is the pre-activation output
// Z of LinearLayers()[i], (N·Rows)×Out, and saved[s] the tensor of the s-th save op, N×its
// shape.
type traceState struct {
	outputs, saved [][]float32
}

// Trace runs the network forward on b without gradients and returns per-example losses and
// every dense/conv layer's input. It refuses a network with GroupNorm layers, whose parameters
// a likelihood-ratio estimator does not cover.
func (nw *Network) Trace(b Batch) (Trace, error) {
	if err := nw.checkBatch(b); err != nil {
		return Trace{}, err
	}
	lin := nw.LinearLayers()
	if err := nw.forwardOnlyCovered(); err != nil {
		return Trace{}, err
	}
	idx := nw.linearIndices()
	st := &traceState{outputs: make([][]float32, len(lin))}
	tr := Trace{Loss: make([]float64, b.N), Inputs: make([][]float32, len(lin)), Resume: st}
	for i, l := range lin {
		tr.Inputs[i] = make([]float32, b.N*l.Geometry.Rows*l.Geometry.In)
		st.outputs[i] = make([]float32, b.N*l.Geometry.Rows*l.Geometry.Out)
	}
	for start := 0; start < b.N; {
		t, m, err := nw.forwardChunk(b, start, modeTrace, tr.Loss)
		if err != nil {
			return Trace{}, err
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
// LinearLayers()[layer] only, resuming from tr = Trace(b): the layers before it are not
// recomputed (their output is tr's, as are the skip tensors saved before it), which is what
// Algorithm 1 of Feng et al. needs, one layer's noise at a time. It equals PerturbedLosses with
// noise on that layer alone up to float32 rounding ((AW + b) + z instead of AW + (b + z)).
func (nw *Network) PerturbedLossesFrom(b Batch, tr Trace, layer int, noise []float32, loss []float64) error {
	if err := nw.checkBatch(b); err != nil {
		return err
	}
	lin := nw.LinearLayers()
	if layer < 0 || layer >= len(lin) {
		return fmt.Errorf("models: layer %d is not one of the %d dense/conv layers", layer, len(lin))
	}
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
		m := min(nw.res.chunk, b.N-start)
		t, err := nw.tapeFrom(nw.bucket(m), modeResume, nw.linearIndices()[layer])
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
		if err := nw.runLoaded(t, start, m); err != nil {
			return err
		}
		if err := nw.chunkLosses(t, b, start, m, loss); err != nil {
			return err
		}
		start += m
	}
	return nil
}

// resumeInputs builds the inputs of a modeResume graph starting at parameter layer from: the
// layer's pre-activation output as x (a conv layer's turned to NCHW) and an input for each skip
// tensor still saved there. It returns the index of the first op to build after them.
func (nw *Network) resumeInputs(g *G.ExprGraph, t *tape, n, from int, toNCHW func(*G.Node, int) (*G.Node, error)) (int, *G.Node, []*G.Node, error) {
	p := nw.plan
	first := -1
	for oi, o := range p.ops {
		if (o.kind == opDense || o.kind == opConv) && o.p == from {
			first = oi
			break
		}
	}
	l := &p.layers[from]
	if first < 0 {
		return 0, nil, nil, fmt.Errorf("models: %s is not a dense or conv op of the forward pass (a shortcut projection): a pass cannot resume from it", l.name)
	}
	var shapes [][]int // every save op's shape, in order
	for _, o := range p.ops[:first] {
		switch o.kind {
		case opSave:
			t.live = append(t.live, len(shapes))
			shapes = append(shapes, o.out)
		case opAddSave:
			t.live = t.live[:len(t.live)-1]
		case opGN:
			return 0, nil, nil, fmt.Errorf("models: %s has GroupNorm before %s: a pass can resume only through dense, conv, pooling and activation layers", nw.res.name, l.name)
		}
	}
	stack := make([]*G.Node, len(t.live))
	t.saved = make([][]float32, len(t.live))
	for i, s := range t.live {
		t.saved[i] = make([]float32, n*prod(shapes[s]))
		stack[i] = inputNode(g, fmt.Sprintf("saved%d", s), t.saved[i], append([]int{n}, shapes[s]...)...)
	}
	t.x = make([]float32, n*l.rows()*l.k)
	h := inputNode(g, l.name+".Z", t.x, n*l.rows(), l.k)
	if l.kind == kindConv {
		var err error
		if h, err = toNCHW(h, from); err != nil {
			return 0, nil, nil, err
		}
	}
	return first + 1, h, stack, nil
}

// forwardOnlyCovered refuses networks whose parameters a likelihood-ratio estimator over the
// dense/conv pre-activations does not cover: GroupNorm layers, and standardised conv weights
// (the estimate would be the gradient with respect to Ŵ, not to the parameters).
func (nw *Network) forwardOnlyCovered() error {
	for j := range nw.plan.layers {
		if l := &nw.plan.layers[j]; l.kind != kindDense && l.kind != kindConv {
			return fmt.Errorf("models: %s has a %s layer: forward-only estimators cover dense and conv layers only; use a model without normalisation layers", nw.res.name, l.name)
		}
	}
	return nw.refuseStandardised()
}

// refuseStandardised refuses a network with standardised conv weights (see forwardOnlyCovered).
func (nw *Network) refuseStandardised() error {
	for j := range nw.plan.layers {
		if l := &nw.plan.layers[j]; l.ws {
			return fmt.Errorf("models: %s standardises the weights of %s: forward-only estimators cover plain dense and conv layers only; set weight_standardization false", nw.res.name, l.name)
		}
	}
	return nil
}

// PerturbedLosses runs the network forward on b with noise[i] ((N·Rows)×Out row-major, or nil
// for none) added to the pre-activation output of LinearLayers()[i], and writes each example's
// softmax cross-entropy into loss.
func (nw *Network) PerturbedLosses(b Batch, noise [][]float32, loss []float64) error {
	if err := nw.checkBatch(b); err != nil {
		return err
	}
	if err := nw.refuseStandardised(); err != nil {
		return err
	}
	lin := nw.LinearLayers()
	if len(noise) != len(lin) || len(loss) < b.N {
		return fmt.Errorf("models: %d noise tensors for %d dense/conv layers, %d losses for %d examples", len(noise), len(lin), len(loss), b.N)
	}
	perturb := make([][]float32, len(nw.plan.layers))
	idx := nw.linearIndices()
	for i, l := range lin {
		if noise[i] == nil {
			continue
		}
		if want := b.N * l.Geometry.Rows * l.Geometry.Out; len(noise[i]) != want {
			return fmt.Errorf("models: noise for layer %s has %d values, want N·rows·out = %d", l.Name, len(noise[i]), want)
		}
		perturb[idx[i]] = noise[i]
	}
	for start := 0; start < b.N; {
		t, err := nw.tape(nw.bucket(min(nw.res.chunk, b.N-start)), modeForward)
		if err != nil {
			return err
		}
		t.perturb = perturb
		_, m, err := nw.forwardChunk(b, start, modeForward, loss)
		t.perturb = nil
		if err != nil {
			return err
		}
		start += m
	}
	return nil
}

// forwardChunk runs the chunk of b at start in mode md and writes its examples' losses into
// loss[start:].
func (nw *Network) forwardChunk(b Batch, start int, md mode, loss []float64) (*tape, int, error) {
	var s Stats
	t, m, err := nw.pass(b, start, md, &s, nil)
	if err != nil {
		return nil, 0, err
	}
	return t, m, nw.chunkLosses(t, b, start, m, loss)
}

// chunkLosses writes the losses of t's samples [start, start+m) of b into loss[start:]. A
// non-finite loss is written as it is, not an error: whether a pass fails must not depend on
// one example, and the caller's per-example function clips that example's contribution to zero.
func (nw *Network) chunkLosses(t *tape, b Batch, start, m int, loss []float64) error {
	c := nw.res.classes
	for i := 0; i < m; i++ {
		loss[start+i] = exampleLoss(t.logits[i*c:(i+1)*c], int(b.Y[start+i]))
	}
	return nil
}

// exampleLoss is the softmax cross-entropy of one logit row for label y, in float64.
func exampleLoss(row []float32, y int) float64 {
	return logSumExp(row) - float64(row[y])
}

// addPerturbation adds the noise of samples [start, start+m) to t's pre-activation inputs E,
// already filled with the biases.
func (nw *Network) addPerturbation(t *tape, start, m int) {
	for j, z := range t.perturb {
		if z == nil {
			continue
		}
		l := &nw.plan.layers[j]
		w := l.rows() * l.k
		for i, v := range z[start*w : (start+m)*w] {
			t.e[j][i] += v
		}
	}
}
