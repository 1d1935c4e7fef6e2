package models

import (
	"fmt"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/layer"
)

// Forward-only access for estimators that never differentiate the network (DP-ULR's
// likelihood-ratio gradients, Feng et al., "Forward Learning with Differential Privacy", Eq. 4): the clean per-example losses with every dense and
// conv layer's input, and per-example losses of a forward pass with given noise added to those
// layers' pre-activation outputs. The model never draws noise: the caller supplies it. These
// passes run on the graph engine (WithGraph; models/graph/trace.go).

// LinearLayers lists the network's dense and conv layers in forward order, except conv layers
// with standardised weights: their output is A·Ŵ, not A·W with W the parameters as they are, so
// an estimator of ∂ℓ/∂W from the output's sensitivity does not apply to them
// (models/internal/core/ws.go).
func (nw *Network) LinearLayers() []layer.Linear {
	var out []layer.Linear
	for _, j := range nw.linearIndices() {
		l := &nw.plan.layers[j]
		out = append(out, layer.Linear{Name: l.name, Geometry: l.geometry(), Weight: l.w, Bias: l.b})
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

// Trace runs the network forward on b without gradients and returns per-example losses and
// every dense/conv layer's input. It refuses a network with GroupNorm layers, whose parameters
// a likelihood-ratio estimator does not cover.
func (nw *Network) Trace(b data.Batch) (layer.Trace, error) {
	if err := nw.checkBatch(b); err != nil {
		return layer.Trace{}, err
	}
	if err := nw.forwardOnlyCovered(); err != nil {
		return layer.Trace{}, err
	}
	gr, err := nw.graph("Trace")
	if err != nil {
		return layer.Trace{}, err
	}
	return gr.Trace(b)
}

// PerturbedLossesFrom writes into loss each example's softmax cross-entropy of a forward pass
// with noise ((N·Rows)×Out row-major, or nil for none) added to the pre-activation output of
// LinearLayers()[layer] only, resuming from tr = Trace(b): the layers before it are not
// recomputed (their output is tr's, as are the skip tensors saved before it), which is what
// Algorithm 1 of Feng et al. needs, one layer's noise at a time. It equals PerturbedLosses with
// noise on that layer alone up to float32 rounding ((AW + b) + z instead of AW + (b + z)).
func (nw *Network) PerturbedLossesFrom(b data.Batch, tr layer.Trace, layer int, noise []float32, loss []float64) error {
	if err := nw.checkBatch(b); err != nil {
		return err
	}
	if n := len(nw.linearIndices()); layer < 0 || layer >= n {
		return fmt.Errorf("models: layer %d is not one of the %d dense/conv layers", layer, n)
	}
	gr, err := nw.graph("PerturbedLossesFrom")
	if err != nil {
		return err
	}
	return gr.PerturbedLossesFrom(b, tr, layer, noise, loss)
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
func (nw *Network) PerturbedLosses(b data.Batch, noise [][]float32, loss []float64) error {
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
	for i, l := range lin {
		if want := b.N * l.Geometry.Rows * l.Geometry.Out; noise[i] != nil && len(noise[i]) != want {
			return fmt.Errorf("models: noise for layer %s has %d values, want N·rows·out = %d", l.Name, len(noise[i]), want)
		}
	}
	gr, err := nw.graph("PerturbedLosses")
	if err != nil {
		return err
	}
	return gr.PerturbedLosses(b, noise, loss)
}
