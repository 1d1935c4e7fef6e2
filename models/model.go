package models

import (
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/layer"
)

// Model is a classifier whose parameters live in one flat float32 vector and that computes the
// per-sample quantities private optimizers need.
type Model interface {
	Name() string
	// InputShape is the shape of one example, e.g. [1 28 28] or [784].
	InputShape() []int
	Classes() int
	// Params is the model's parameters as ONE flat []float32; it aliases the model's storage
	// (the graph engine's tensors are built on sub-slices of it): writing to it changes
	// the model.
	Params() []float32
	Layout() []layer.Param
	// ClippedGradSum writes Σ_i min(1, clip/‖g_i‖₂)·g_i into grad (len(Params())), where g_i is
	// the gradient of sample i's loss at the current parameters; clip = +Inf means no clipping.
	// If norms != nil (len ≥ b.N) it receives ‖g_i‖₂. Uses ghost clipping (no per-sample
	// gradients materialised) wherever that is cheaper. An example whose g_i is not finite
	// contributes zero and is counted in Stats.NonFinite; it is not an error.
	ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error)
	// PerSampleGradSum materialises each sample's gradient g_i in turn (O(params) memory),
	// calls f(i, g_i), which may transform it in place, and writes Σ_i f(g_i) into grad. f may
	// be called from several goroutines at once, for different i: it must be safe for that.
	// A g_i with a non-finite coordinate is not passed to f and contributes zero (counted in
	// Stats.NonFinite); f must map a finite g_i to a finite one.
	PerSampleGradSum(b data.Batch, f func(i int, g []float32), grad []float32) (data.Stats, error)
	// Evaluate computes the loss and accuracy without gradients.
	Evaluate(b data.Batch) (data.Stats, error)
	// Predict writes the arg-max class of each example into pred (len ≥ b.N).
	Predict(b data.Batch, pred []int32) error
}
