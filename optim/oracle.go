package optim

import "github.com/dptrain/dptrain/data"

// GradientOracle is the part of a models.Model a private step needs: the parameter vector and
// per-sample gradient sums. Every models.Model satisfies it.
type GradientOracle interface {
	// Params returns one flat vector aliasing the model's parameters; steps update it in place.
	Params() []float32
	// ClippedGradSum writes Σ_i min(1, clip/‖g_i‖)·g_i over the batch into grad (clip = +Inf:
	// the plain sum) and the per-sample norms ‖g_i‖ into norms.
	ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error)
	// PerSampleGradSum materialises each per-sample gradient g_i, calls f(i, g_i), which may
	// transform g_i in place, and writes the sum of the transformed gradients into grad. f may
	// be called from several goroutines at once, for different i: it must be safe for that.
	PerSampleGradSum(b data.Batch, f func(i int, g []float32), grad []float32) (data.Stats, error)
}
