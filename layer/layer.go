package layer

// Param describes one parameter tensor inside a model's flat parameter vector.
type Param struct {
	Name         string
	Shape        []int
	Offset, Size int
	// Bias marks additive parameters (dense/conv biases, GroupNorm shifts), which optimizers
	// usually exclude from weight decay.
	Bias bool
}

// Geometry is the shape of a dense or conv layer's per-example blocks of its input A and of
// the gradient G of the loss with respect to its output.
type Geometry struct {
	// Rows is how many rows each example contributes: 1 for a dense layer, the number of
	// output positions (oh·ow) for a conv layer, whose A rows are im2col patches.
	Rows int
	// In is the width of A (dense: input features; conv: patch size C·kh·kw) and Out the
	// width of G (dense: outputs; conv: output channels); the weight is In×Out.
	In, Out int
	// Bias says the layer has a bias, whose per-example gradient is the column sum of G_i.
	Bias bool
}

// UseGram reports whether an example's squared gradient norm ‖AᵢᵀGᵢ‖² is cheaper by the Gram
// identity ⟨AᵢAᵢᵀ, GᵢGᵢᵀ⟩ (Rows² (In+Out) operations) than by materialising AᵢᵀGᵢ
// (Rows·In·Out): Li et al., "Large Language Models Can Be Strong Differentially Private
// Learners", Section 4 (ghost clipping).
func (g Geometry) UseGram() bool {
	return g.Rows*(g.In+g.Out) < 2*g.In*g.Out
}

// Linear is a dense or conv layer as a forward-only estimator (DP-ULR's likelihood-ratio
// gradients) sees it.
type Linear struct {
	Name string
	// Geometry is the shape of the layer's per-example blocks of input A and output Z.
	Geometry Geometry
	// Weight is the offset in the flat parameters of the In×Out weight (row-major); Bias that
	// of the Out biases, or −1.
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
