package kernels

// ParamInfo describes one parameter tensor inside a model's flat parameter vector.
type ParamInfo struct {
	Name         string
	Shape        []int
	Offset, Size int
	// Bias marks additive parameters (dense/conv biases, GroupNorm shifts), which optimizers
	// usually exclude from weight decay.
	Bias bool
}

// LinearLayer is a dense or conv layer as a forward-only estimator (DP-ULR's likelihood-ratio
// gradients) sees it.
type LinearLayer struct {
	Name string
	// Geometry is the shape of the layer's per-example blocks of input A and output Z.
	Geometry LayerGeometry
	// Weight is the offset in Params of the In×Out weight (row-major); Bias that of the Out
	// biases, or −1.
	Weight, Bias int
}

// Trace is one clean forward pass over a batch.
type Trace struct {
	// Loss is each example's softmax cross-entropy.
	Loss []float64
	// Inputs[i] is the input A of the model's i-th linear layer for the whole batch,
	// (N·Rows)×In row-major (im2col patches for a conv layer).
	Inputs [][]float32
	// Resume is the model's own record of the pass, what it resumes a perturbed pass from
	// (models.Network: its layers' outputs and saved skip tensors). Nil in a Trace the model
	// did not make; callers pass it back unchanged.
	Resume any
}
