package models

import "github.com/dptrain/dptrain/data"

// The direct executor runs the forward pass, the backward pass and ghost clipping of a network
// of dense, conv2d, max/average pooling, flatten, tanh/ReLU, GroupNorm, global average pooling
// layers and residual blocks without a gorgonia graph, for the hot loop of training and
// evaluation. Its design:
//
//   - One layout end to end: activations are NHWC (nhwc.go), the layout a conv layer's GEMM
//     produces, so no layer transposes its output; only flatten reorders a sample's values to
//     the (channel, row, column) order the parameter layout and the graph use.
//   - Every core busy: a chunk of samples is cut into blocks of dr.block samples, and each
//     block's forward pass, backward pass, per-example norms and clip factors, and its share of
//     the conv and GroupNorm layers' clipped gradients run on one goroutine from start to end,
//     with single-threaded BLAS (blas_threads_openblas.go), so the block's patches and gradients
//     stay in that core's cache. The dense layers' clipped gradients, Aᵀ·diag(c)·G, are then
//     one float64 GEMM over the chunk per fixed slice of the weight's rows.
//   - A DAG in forward order: each op reads the output of an earlier op (a residual add reads
//     two), and the backward pass, in reverse order, writes a tensor's gradient from its last
//     reader and adds the others' to it, so a block input gets its main path's and its
//     shortcut's gradients.
//   - No work that nothing reads: weight gradients are computed once, already clipped; ops
//     before the first parameter layer compute no input gradient.
//   - Buffers are allocated for the chunk size once and reused by every call.
//   - Each example alone, bit for bit: every product whose rows are one example's is computed
//     so that its result depends on that example alone, never by one BLAS GEMM over the block:
//     a conv layer's PₖŴ and GₖŴᵀ as one GEMM of a fixed shape per example, a dense layer's
//     zₖ = Wᵀxₖ and W·gₖ by kernels.DenseRows (every element one chain of fused multiply-adds
//     in a fixed order, whichever rows share the call) where the CPU has AVX2 and FMA, and
//     as one gemv per example elsewhere. OpenBLAS computes the rows of a GEMM at
//     different offsets along different micro-kernel paths (on its Haswell kernels, a row's
//     offset modulo 12 and the edge tiles), which differ in the last bit, and a max-pool
//     near-tie or a tanh turns that bit into a different gradient: an example's contribution
//     would depend on its slot, and removing one example moves every later one. With one call
//     per example, an example's activations, gradients, norm and clip factor are the same
//     whatever its slot, its neighbours, the batch, block and chunk size and the worker count,
//     and equal to the example's alone (TestEachExampleAloneBitForBit). The operands that
//     differ between examples are copied to the same 64-byte-aligned scratch first wherever a
//     kernel could choose its path by their address: gonum's pure-Go dot products, for one,
//     start with unaligned elements one at a time and so sum in an order that follows the
//     address.
//   - Sums across examples in float64: the clipped sum is accumulated in float64 (conv and
//     GroupNorm partial sums per block, added in block order; dense layers' Aᵀ·diag(c)·G as a
//     float64 GEMM over the chunk) and rounded to float32 once, so its order changes the
//     result by float64 round-off only (docs/privacy.md bounds it).
//
// The graph engine (package models/graph) stays the reference and the path for gelu networks,
// traces and resumed passes; direct_test.go checks the two agree on every layer type.
//
// The executor's phases, one file each: direct_plan.go builds the op list from the network's
// plan and sizes the buffers; direct_forward.go runs the forward pass and the loss head;
// direct_backward.go the backward pass; direct_clip.go the per-example norms, clip factors and
// clipped sums, and the per-sample path; direct_schedule.go cuts a batch into chunks and blocks
// and spreads them over the workers.

// directBlock is the number of samples one goroutine carries through a whole step at a time:
// large enough for efficient GEMMs (a cnn-tramer-boneh block's first conv GEMM has 32·196 rows),
// small enough that a chunk of 256 gives each of two cores four blocks.
const directBlock = 32

// direct holds a network's direct-executor state: the op list and the buffers for chunks of up
// to n samples.
type direct struct {
	nw    *Network
	ops   []dOp
	block int  // samples one goroutine carries through a step (directBlock or fewer, see newDirect)
	fma   bool // dense layers run kernels.DenseRows (the CPU has AVX2 and FMA), else one gemv per sample
	n     int  // samples the buffers hold

	x     []float32   // the chunk's inputs, NHWC
	out   [][]float32 // op i's output, n × outSize
	dout  [][]float32 // gradient of the summed loss at op i's output, n × outSize (ops that depend on parameters; the last is gl)
	gl    []float32   // gradient of the summed loss at the logits, n × classes
	patch [][]float32 // conv layer j's patch matrix, n·rows × d
	arg   [][]int32   // max-pool op i's argmax indices, n × outSize
	hatG  [][]float32 // GroupNorm op i: x̂, n × outSize
	stat  [][]float64 // GroupNorm op i: each sample's per-channel group 1/σ, n × c
	gnG   [][]float32 // GroupNorm layer j: each sample's γ and β gradients, n × 2c
	wp    [][]float32 // conv layer j's weight with rows in patch order (kernel row, column, channel); Ŵ if standardised
	hat   [][]float32 // standardised conv layer j: Ŵ in parameter row order
	// Dense layer j for denseFMA: its weight with the columns padded to a multiple of 16 (nil
	// when they are: the parameters serve), and its transpose likewise (nil when no gradient
	// flows to its input).
	fw, bw [][]float32
	inv    [][]float64 // standardised conv layer j: 1/σ per output channel (core.Standardise)
	mean   []float64   // standardise's scratch
	perm   [][]int32   // conv layer j: perm[r] is the parameter row of patch-order row r

	sq    []float64 // per-sample squared gradient norms
	scale []float32 // per-sample clip factors

	partSize int          // per block: all conv and GroupNorm layers' parameter gradients
	partOff  []int        // conv or GroupNorm layer j's offset within a block's partial sum
	part     [][]float64  // per block
	g64      []float64    // the clipped sum over every chunk, rounded to float32 once at the end
	a64      [][]float64  // dense op i: the chunk's A in float64, n × d, for the clipped sum
	g64d     [][]float64  // dense op i: the chunk's scaled G in float64, n × k
	stats    []data.Stats // per block
	psum     [][]float64  // per block: PerSampleGradSum's partial sums, one parameter vector each
	errs     []error      // per block

	work []directScratch // per worker

	// dn runs the conv layers on oneDNN (engine dnnl, dnnl.go), one image per call; nil runs
	// them as im2col and one GEMM per example.
	dn *dnnlConvs
	// patches[j] is set when the forward pass must write conv layer j's patch matrix: always
	// without dn; with dn, only where a later stage of the pass reads it (ghost norms by the
	// Gram identity, unclipped sums, PerSampleGradSum).
	patches []bool
}

// directScratch is one worker's scratch space.
type directScratch struct {
	// One example's operands and results of its BLAS calls, each on a 64-byte boundary
	// (alignedF32): a conv layer's patch gradient and output gradient, a dense layer's input
	// and output vectors.
	dp, gin, vin, vout []float32
	// denseFMA's output for a block when a dense layer's width is not a multiple of 16.
	dense  []float32
	key    []int32   // max pooling: keys and indices
	max2   []float32 // max pooling 2/1: pair maxima
	norm   []float32 // squaredNorms, column sums
	norm64 []float64 // squaredNorms' Gram matrices in float64
	gn64   []float64 // GroupNorm's per-channel accumulators
	gn32   []float32 // GroupNorm's per-channel coefficients
	accum  []float32 // an op's input gradient for one block, before it is added to another's
	// Conv layers whose per-sample gradients are materialised to compute their norms
	// (keepSample): the block's per-sample weight gradients and bias gradients, by layer.
	mat, bias [][]float32
	// Other conv layers: the block's P and G in float64, by layer.
	blk64 [][]float64
	// PerSampleGradSum: one sample's gradient, and a conv layer's in patch row order.
	sample, wtmp []float32
	// standardiseBack's scratch.
	wsAcc []float64
	// One example's P and G in float64 for its conv norm, on a 64-byte boundary.
	one64 []float64
	// dn is this worker's oneDNN state (engine dnnl) and dnErr the error of creating it; err
	// is the first error of its oneDNN calls in the current block.
	dn         *dnnlWork
	dnErr, err error
}
