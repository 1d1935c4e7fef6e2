// Package models defines the networks dptrain trains — logistic regression, MLPs, CNNs (conv,
// max/average pooling, GroupNorm, ResNet basic blocks) and presets such as cnn-tramer-boneh,
// lenet5, mlp-784-128-64-32-10 and resnet20-gn — and computes what private optimizers need from
// them: per-sample gradient norms and clipped gradient sums, computed without materialising
// per-sample gradients (ghost clipping).
//
// A Network is built from a Spec (which a YAML config maps onto) and an explicit *rand.Rand.
// Its parameters are one flat []float32 (Params); Layout names the tensors inside it. The loss
// is softmax cross-entropy summed over the batch: optimizers divide by the batch size
// themselves.
//
// Two engines run a network's passes. The direct executor (direct.go and the direct_*.go files
// beside it, nhwc.go, dnnl.go) runs the training and evaluation passes of every network but
// those with gelu (the CNN, MLP and ResNet presets: dense, conv2d, pooling, flatten, tanh,
// ReLU, GroupNorm, residual blocks with identity or projection shortcuts, global average
// pooling) without a graph: NHWC activations end to end, a chunk cut into blocks of up to 32
// samples that each run forward, backward, norms and clipping on one goroutine with
// single-threaded BLAS, each weight gradient computed once and already clipped, no allocation
// per step, and results bit-identical whatever the number of workers. Its ops form a DAG in
// forward order: a tensor that a residual block reads twice gets its gradient from both
// readers. The graph engine, package models/graph, runs the network as gorgonia graphs: it is
// the reference the direct executor is checked against (direct_test.go), the engine of gelu
// networks and of engine graph, and the only one with forward-only traces, resumed passes and
// ReferenceGrad. This package does not import gorgonia: a Network gets the graph engine through
// the Graph interface and the WithGraph option, which models/graph's New, ReadParams and Load
// pass; a Network built by this package's New, ReadParams or Load has none, and refuses a spec
// that only the graph runs. Spec.Engine chooses between them (auto: direct wherever it
// applies). The network's layout as the graph builds it, and the arithmetic both engines must
// compute the same way (weight standardisation, the loss head's log-sum-exp, GroupNorm's ε),
// live in models/internal/core.
//
// How the gradient pieces are obtained: each layer with parameters has an input A (im2col
// patches for conv) and the gradient G of the summed loss with respect to its output; the
// per-sample norms and the clipped sum are then a few BLAS calls on A and G (gonum blas32,
// which the openblas build tag routes to OpenBLAS): see ghost.go for the identities. Those
// calls are exported as plain functions on (A, G, layer.Geometry), SquaredNorms and ScaledSum
// (package internal/kernels, also named here), so that an optimizer that computes A and G
// itself clips per example with the same code. No engine computes the parameter gradients of
// the summed loss and then a per-sample correction: a private step costs about one non-private
// step plus the norms.
//
// Per-sample clipping bounds an example's contribution only if nothing on the per-example path
// couples the rows of a batch. gorgonia.org/tensor v0.9.24's float32 LogSoftMax does (each
// row's running maximum starts from the first element of the whole array), so both engines'
// loss heads are row-local, in float64. The other ops on the path were audited: pooling and
// GroupNorm loop per (sample, channel) plane and per (sample, group); im2col, the elementwise
// activations and additions are row-independent; the layer products are row-independent in
// exact arithmetic but not in a BLAS, which computes a GEMM's rows at different offsets along
// different kernel paths, so each engine makes one call of a fixed shape per example and every
// per-example quantity is bit-identical whatever the example's slot and neighbours
// (TestEachExampleAloneBitForBit); the loss's sum to a scalar has a backward pass that
// broadcasts one value, whatever the rows hold. TestClippingDecomposes checks the consequence
// over every layer type, input scales 1 to 10³ and a crafted example at every position, on both
// clipping paths, and TestDirectClippingDecomposesAcrossBlocks across the direct executor's
// block boundaries. A non-finite per-example norm or gradient is clipped to zero (its rows are
// zeroed, not scaled by 0, since 0·NaN is NaN) and counted in the operator-only
// Stats.NonFinite; it is never an error, so whether a step runs does not depend on the private
// data (ClipScale). Conv norms on the Gram path are computed in float64 with a rigorous
// round-off allowance and never under-estimate the gradient's norm, however its per-position
// terms cancel (package internal/kernels, also named here).
//
// Spec.WeightStandardization standardises every conv layer's weights per output channel in the
// forward pass (Qiao et al., "Micro-Batch Training with Batch-Channel Normalization and Weight
// Standardization"; De et al. 2022 pair it with GroupNorm): models/internal/core/ws.go. Both
// engines run it. It is a reparametrisation, so per-example gradients are still gradients of
// each example's own loss with respect to the parameters; a standardised layer's per-example
// weight gradient is P_iᵀG_i mapped back through the standardisation's Jacobian (one linear map
// for every example), and it is that mapped-back gradient which is materialised, measured and
// summed for clipping. Forward-only estimators refuse standardised networks (LinearLayers
// leaves such layers out).
//
// ReferenceGrad computes one sample's gradient with gorgonia's ordinary autodiff with respect
// to the parameter nodes (on the graph engine); tests check ClippedGradSum and PerSampleGradSum
// against it and against finite differences for every layer type.
//
// Forward-only estimators (DP-ULR's likelihood ratios, trace.go) get Trace, the clean pass's
// per-example losses with every dense/conv layer's input A, pre-activation output Z and the
// save layers' skip tensors; PerturbedLosses, a pass with caller-supplied noise added to
// layers' Z; and PerturbedLossesFrom, the same with noise on one layer, resumed from that
// layer's clean Z (a graph per start layer whose inputs are Z and the skip tensors still saved
// there), so the layers before it are not recomputed. All three run on the graph engine.
//
// Parameters are saved in a checksummed binary format (checkpoint.go) with atomic writes.
//
// The package never draws noise and never decides anything about privacy.
package models
