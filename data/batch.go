package data

// Batch is a batch of N examples: X is row-major N×(prod InputShape), Y holds the class labels.
// Models and optimizers share it.
type Batch struct {
	X []float32
	Y []int32
	N int
	// Index, when set, holds the dataset indices of the rows: row i is example Index[i] of the
	// training split. Algorithms that keep per-example state across steps (DP-MBCD's hidden
	// auxiliaries) key it by these. Nil where rows have no dataset identity (evaluation,
	// benchmarks); a model never reads it.
	Index []int
}

// Stats summarises a pass over a batch. Models and optimizers share it.
type Stats struct {
	Loss    float64 // SUM of the per-sample softmax cross-entropy losses
	Correct int     // samples whose arg-max prediction equals the label
	N       int     // samples in the batch (padding rows never count)
	Clipped int     // samples whose gradient norm exceeded the clip norm
	// NonFinite counts the samples whose per-example contribution was not finite (a NaN or
	// infinite gradient norm or coordinate, e.g. from a NaN input or an overflowing outer
	// product) and was therefore clipped to zero: they add nothing to the sum. It is an
	// operator-only metric, a function of the private batch: never release it or stop on it.
	NonFinite int
}

// Add accumulates o into s.
func (s *Stats) Add(o Stats) {
	s.Loss += o.Loss
	s.Correct += o.Correct
	s.N += o.N
	s.Clipped += o.Clipped
	s.NonFinite += o.NonFinite
}
