package models

import (
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/chewxy/math32"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/dptrain/dptrain/internal/kernels"
)

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
// The gorgonia graph (graph.go) stays the reference and the path for gelu networks, traces and
// resumed passes; direct_test.go checks the two agree on every layer type.

// directBlock is the number of samples one goroutine carries through a whole step at a time:
// large enough for efficient GEMMs (a cnn-tramer-boneh block's first conv GEMM has 32·196 rows),
// small enough that a chunk of 256 gives each of two cores four blocks.
const directBlock = 32

// directSliceRows is the number of weight rows one task of a dense layer's clipped-gradient
// GEMM computes.
const directSliceRows = 128

// dOp is one op of the direct executor with its per-sample input and output shapes as
// (h, w, c); a vector of n features is 1×1×n. Ops are in forward (topological) order; each reads
// the output of op src (-1: the chunk's input), and an add op also that of src2.
type dOp struct {
	kind                   opKind
	p                      int // parameter layer (dense, conv, GroupNorm)
	relu                   bool
	conv                   convGeom
	pool                   poolGeom // also global average pooling: one window over the input
	gn                     gnGeom
	ih, iw, ic, oh, ow, oc int
	src, src2              int
	// prop (prop2) is set when the gradient flows on to src (src2): that tensor depends on
	// parameters. acc (acc2) is set when a later op has already written src's gradient, so this
	// op adds to it (a tensor read by a residual block's main path and its shortcut).
	prop, prop2, acc, acc2 bool
}

func (o *dOp) inSize() int  { return o.ih * o.iw * o.ic }
func (o *dOp) outSize() int { return o.oh * o.ow * o.oc }

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
	inv    [][]float64 // standardised conv layer j: 1/σ per output channel (ws.go)
	mean   []float64   // standardise's scratch
	perm   [][]int32   // conv layer j: perm[r] is the parameter row of patch-order row r

	sq    []float64 // per-sample squared gradient norms
	scale []float32 // per-sample clip factors

	partSize int         // per block: all conv and GroupNorm layers' parameter gradients
	partOff  []int       // conv or GroupNorm layer j's offset within a block's partial sum
	part     [][]float64 // per block
	g64      []float64   // the clipped sum over every chunk, rounded to float32 once at the end
	a64      [][]float64 // dense op i: the chunk's A in float64, n × d, for the clipped sum
	g64d     [][]float64 // dense op i: the chunk's scaled G in float64, n × k
	stats    []Stats     // per block
	psum     [][]float64 // per block: PerSampleGradSum's partial sums, one parameter vector each
	errs     []error     // per block

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

// directBlockFloats bounds the activation, gradient and patch buffers one block holds: a
// network whose per-sample buffers are larger runs in smaller blocks (ResNet-20 on 32×32
// inputs: about 3 million floats per sample, blocks of 4), so that a chunk still gives every
// core a block and a block's working set stays within reach of the caches. Every preset with
// only dense, conv, pooling and flatten layers keeps blocks of directBlock.
const directBlockFloats = 1 << 24

// newDirect returns the direct executor for nw's plan, or nil if the plan has a layer it does
// not run (gelu, non-square kernels, global average pooling of a non-square input).
func newDirect(nw *Network) *direct {
	p := nw.plan
	dr := &direct{nw: nw, fma: kernels.DenseFMA()}
	var h, w, c int // the current tensor's shape
	cur := -1       // the op whose output is the current tensor (-1: the input)
	var saved []int // ops whose outputs save layers pushed
	shape := func(t int) (int, int, int) {
		if t < 0 {
			if in := nw.res.input; len(in) == 3 {
				return in[1], in[2], in[0]
			}
			return 1, 1, nw.inDim
		}
		o := &dr.ops[t]
		return o.oh, o.ow, o.oc
	}
	// conv appends conv layer j reading op src's output, or returns false.
	conv := func(j, src int) bool {
		l := &p.layers[j]
		h, w, c := shape(src)
		if l.kh != l.kw || l.c != c || l.h != h || l.wd != w {
			return false
		}
		dr.ops = append(dr.ops, dOp{kind: opConv, p: j, src: src, src2: -1, ih: h, iw: w, ic: c, oh: l.oh, ow: l.ow, oc: l.k,
			conv: convGeom{h: h, w: w, c: c, k: l.kh, s: l.stride, pad: l.pad, oh: l.oh, ow: l.ow, out: l.k}})
		return true
	}
	gn := func(j, src int) bool {
		l := &p.layers[j]
		h, w, c := shape(src)
		if l.c != c || l.hw != h*w {
			return false
		}
		dr.ops = append(dr.ops, dOp{kind: opGN, p: j, src: src, src2: -1, ih: h, iw: w, ic: c, oh: h, ow: w, oc: c,
			gn: gnGeom{hw: h * w, c: c, groups: l.groups}})
		return true
	}
	for _, o := range p.ops {
		h, w, c = shape(cur)
		d := dOp{kind: o.kind, p: o.p, src: cur, src2: -1, ih: h, iw: w, ic: c}
		switch o.kind {
		case opDense:
			l := &p.layers[o.p]
			if h*w*c != l.d {
				return nil
			}
			h, w, c = 1, 1, l.k
		case opConv:
			if !conv(o.p, cur) {
				return nil
			}
			cur = len(dr.ops) - 1
			continue
		case opGN:
			if !gn(o.p, cur) {
				return nil
			}
			cur = len(dr.ops) - 1
			continue
		case opMaxPool, opAvgPool:
			if len(o.out) != 3 {
				return nil
			}
			d.pool = poolGeom{h: h, w: w, c: c, k: o.kernel, s: o.stride, oh: o.out[1], ow: o.out[2]}
			h, w = o.out[1], o.out[2]
		case opGAP:
			if h != w {
				return nil
			}
			d.kind = opAvgPool
			d.pool = poolGeom{h: h, w: w, c: c, k: h, s: h, oh: 1, ow: 1}
			h, w = 1, 1
		case opFlatten:
			h, w, c = 1, 1, h*w*c
		case opAct:
			if o.act != "tanh" && o.act != "relu" {
				return nil
			}
			d.relu = o.act == "relu"
		case opSave:
			saved = append(saved, cur)
			continue
		case opAddSave:
			sc := saved[len(saved)-1]
			saved = saved[:len(saved)-1]
			if o.proj >= 0 {
				if !conv(o.proj, sc) || !gn(o.projGN, len(dr.ops)-1) {
					return nil
				}
				sc = len(dr.ops) - 1
			}
			if sh, sw, scc := shape(sc); sh != h || sw != w || scc != c {
				return nil
			}
			d.src2 = sc
		default:
			return nil
		}
		d.oh, d.ow, d.oc = h, w, c
		if d.outSize() != prod(o.out) {
			return nil
		}
		dr.ops = append(dr.ops, d)
		cur = len(dr.ops) - 1
	}
	if h, w, c := shape(cur); cur != len(dr.ops)-1 || h*w*c != nw.res.classes {
		return nil
	}
	// Which tensors depend on parameters, and which op writes or adds to each input gradient:
	// ops run backwards, so a tensor's last reader in forward order writes its gradient first.
	dep := make([]bool, len(dr.ops))
	for i := range dr.ops {
		o := &dr.ops[i]
		o.prop = o.src >= 0 && dep[o.src]
		o.prop2 = o.src2 >= 0 && dep[o.src2]
		dep[i] = o.kind == opDense || o.kind == opConv || o.kind == opGN || o.prop || o.prop2
	}
	written := make([]bool, len(dr.ops))
	for i := len(dr.ops) - 1; i >= 0; i-- {
		o := &dr.ops[i]
		if o.prop {
			o.acc, written[o.src] = written[o.src], true
		}
		if o.prop2 {
			o.acc2, written[o.src2] = written[o.src2], true
		}
	}
	nl := len(p.layers)
	dr.wp, dr.perm, dr.partOff = make([][]float32, nl), make([][]int32, nl), make([]int, nl)
	dr.hat, dr.inv = make([][]float32, nl), make([][]float64, nl)
	for j := range p.layers {
		l := &p.layers[j]
		dr.partOff[j] = -1
		if l.kind == kindGN {
			dr.partOff[j] = dr.partSize
			dr.partSize += 2 * l.c
			continue
		}
		if l.kind != kindConv {
			continue
		}
		dr.partOff[j] = dr.partSize
		dr.partSize += l.d * l.k
		if l.b >= 0 {
			dr.partSize += l.k
		}
		// Patch-order row (kernel row r, column s, channel ch) is parameter row (ch, r, s).
		dr.wp[j] = make([]float32, l.d*l.k)
		dr.perm[j] = make([]int32, l.d)
		if l.ws {
			dr.hat[j], dr.inv[j] = make([]float32, l.d*l.k), make([]float64, l.k)
			dr.mean = make([]float64, max(len(dr.mean), l.k))
		}
		for r := 0; r < l.kh; r++ {
			for s := 0; s < l.kw; s++ {
				for ch := 0; ch < l.c; ch++ {
					dr.perm[j][(r*l.kw+s)*l.c+ch] = int32((ch*l.kh+r)*l.kw + s)
				}
			}
		}
	}
	// Per-sample buffer floats: outputs, their gradients, patches.
	per := 0
	for i := range dr.ops {
		o := &dr.ops[i]
		per += 2 * o.outSize()
		if o.kind == opGN {
			per += o.outSize()
		}
		if o.kind == opConv {
			per += o.conv.oh * o.conv.ow * o.conv.d()
		}
	}
	dr.block = directBlock
	for dr.block > 4 && dr.block*per > directBlockFloats {
		dr.block /= 2
	}
	return dr
}

// alloc sizes the buffers for chunks of up to n samples.
func (dr *direct) alloc(n int) {
	if n <= dr.n {
		return
	}
	nw := dr.nw
	dr.n = n
	dr.x = make([]float32, n*nw.inDim)
	no := len(dr.ops)
	dr.out, dr.dout, dr.arg, dr.stat = make([][]float32, no), make([][]float32, no), make([][]int32, no), make([][]float64, no)
	dr.hatG = make([][]float32, no)
	dr.patch, dr.gnG = make([][]float32, len(nw.plan.layers)), make([][]float32, len(nw.plan.layers))
	dr.gl = make([]float32, n*nw.res.classes)
	for i := range dr.ops {
		o := &dr.ops[i]
		dr.out[i] = make([]float32, n*o.outSize())
		// A tensor read by two ops (a residual block's input) has one gradient buffer.
		if o.prop && dr.dout[o.src] == nil {
			dr.dout[o.src] = make([]float32, n*o.inSize())
		}
		if o.prop2 && dr.dout[o.src2] == nil {
			dr.dout[o.src2] = make([]float32, n*o.inSize())
		}
		switch o.kind {
		case opMaxPool:
			dr.arg[i] = make([]int32, n*o.outSize())
		case opConv:
			l := &nw.plan.layers[o.p]
			dr.patch[o.p] = make([]float32, n*l.rows()*l.d)
		case opGN:
			dr.stat[i] = make([]float64, n*o.oc)
			dr.hatG[i] = make([]float32, n*o.outSize())
			dr.gnG[o.p] = make([]float32, n*2*o.oc)
		}
	}
	dr.dout[no-1] = dr.gl
	dr.a64, dr.g64d = make([][]float64, no), make([][]float64, no)
	for i := range dr.ops {
		if o := &dr.ops[i]; o.kind == opDense {
			l := &nw.plan.layers[o.p]
			dr.a64[i], dr.g64d[i] = make([]float64, n*l.d), make([]float64, n*l.k)
		}
	}
	dr.sq, dr.scale = make([]float64, n), make([]float32, n)
	nb := (n + dr.block - 1) / dr.block
	dr.part = make([][]float64, nb)
	for b := range dr.part {
		dr.part[b] = make([]float64, dr.partSize)
	}
	dr.stats, dr.errs = make([]Stats, nb), make([]error, nb)
}

// scratch returns worker w's scratch space.
func (dr *direct) scratch(w int) *directScratch {
	for len(dr.work) <= w {
		dr.work = append(dr.work, directScratch{})
	}
	s := &dr.work[w]
	if s.dp == nil {
		dp, gin, vec, best, acc, gn := 0, 0, 0, 1, 0, 0
		for i := range dr.ops {
			o := &dr.ops[i]
			switch {
			case o.kind == opDense:
				vec = max(vec, o.inSize(), o.outSize())
			case o.kind == opConv && o.prop:
				dp = max(dp, o.conv.oh*o.conv.ow*o.conv.d())
				gin = max(gin, o.outSize())
			case o.kind == opMaxPool:
				best = max(best, 4*o.pool.ow*o.pool.c)
			case o.kind == opGN:
				gn = max(gn, 2*o.oc)
			}
			if o.acc || o.acc2 {
				acc = max(acc, o.inSize())
			}
		}
		s.dp, s.gin = alignedF32(dp), alignedF32(gin)
		s.vin, s.vout = alignedF32(vec), alignedF32(vec)
		s.dense = make([]float32, dr.block*kernels.Pad16(vec))
		s.key, s.max2 = make([]int32, best), make([]float32, best)
		s.accum = make([]float32, dr.block*acc)
		s.gn64, s.gn32 = make([]float64, gn), make([]float32, 3*gn/2)
		s.mat, s.bias = make([][]float32, len(dr.nw.plan.layers)), make([][]float32, len(dr.nw.plan.layers))
		s.blk64 = make([][]float64, len(dr.nw.plan.layers))
		for j := range dr.nw.plan.layers {
			if l := &dr.nw.plan.layers[j]; dr.keepSample(l) {
				s.mat[j], s.bias[j] = make([]float32, dr.block*l.d*l.k), make([]float32, dr.block*l.k)
			}
		}
		if dr.dn != nil {
			s.dn, s.dnErr = dr.dn.worker()
		}
	}
	return s
}

// parallel calls f(t, worker) for every task t < tasks on up to GOMAXPROCS goroutines, each
// task on exactly one goroutine, and returns when all have returned.
func (dr *direct) parallel(tasks int, f func(t, worker int)) {
	workers := min(runtime.GOMAXPROCS(0), tasks)
	for w := range max(workers, 1) {
		dr.scratch(w)
	}
	if workers <= 1 {
		for t := range tasks {
			f(t, 0)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				t := int(next.Add(1) - 1)
				if t >= tasks {
					return
				}
				f(t, w)
			}
		}()
	}
	wg.Wait()
}

// refreshWeights copies the conv weights into patch row order, standardised (ws.go) where the
// layer is: the forward and backward passes then run on Ŵ, and wp is the Ŵ that maps
// gradients back (standardiseBack is the same map whatever the order of a column's rows).
// With oneDNN, it also lays them out for its primitives.
func (dr *direct) refreshWeights() error {
	if dr.fma {
		dr.denseOperands()
	}
	for j, wp := range dr.wp {
		if wp == nil {
			continue
		}
		l := &dr.nw.plan.layers[j]
		src := dr.nw.params[l.w : l.w+l.d*l.k]
		if l.ws {
			standardise(src, dr.hat[j], dr.inv[j], dr.mean, l.d, l.k)
			src = dr.hat[j]
		}
		for r, pr := range dr.perm[j] {
			copy(wp[r*l.k:(r+1)*l.k], src[int(pr)*l.k:int(pr+1)*l.k])
		}
		if dr.dn != nil {
			if err := dr.dn.refresh(j, wp); err != nil {
				return err
			}
		}
	}
	return nil
}

// denseOperands lays out the dense layers' weights for denseFMA: W (d×k) with its columns
// padded to a multiple of 16 where they are not, and Wᵀ (k×d) likewise for the layers whose
// input gradient is needed; the padding columns stay zero.
func (dr *direct) denseOperands() {
	nl := len(dr.nw.plan.layers)
	if dr.fw == nil {
		dr.fw, dr.bw = make([][]float32, nl), make([][]float32, nl)
		for i := range dr.ops {
			o := &dr.ops[i]
			if o.kind != opDense {
				continue
			}
			l := &dr.nw.plan.layers[o.p]
			if l.k%16 != 0 {
				dr.fw[o.p] = make([]float32, l.d*kernels.Pad16(l.k))
			}
			if o.prop {
				dr.bw[o.p] = make([]float32, l.k*kernels.Pad16(l.d))
			}
		}
	}
	for j := range dr.fw {
		l := &dr.nw.plan.layers[j]
		w := dr.nw.params[l.w : l.w+l.d*l.k]
		if f := dr.fw[j]; f != nil {
			kp := kernels.Pad16(l.k)
			for r := 0; r < l.d; r++ {
				copy(f[r*kp:r*kp+l.k], w[r*l.k:(r+1)*l.k])
			}
		}
		if b := dr.bw[j]; b != nil {
			dp := kernels.Pad16(l.d)
			for r := 0; r < l.d; r++ {
				for c, v := range w[r*l.k : (r+1)*l.k] {
					b[c*dp+r] = v
				}
			}
		}
	}
}

// standardiseBack maps v, a gradient with respect to conv layer j's Ŵ in patch row order, in
// place to the gradient with respect to its raw weights when the layer is standardised.
func (dr *direct) standardiseBack(j int, v []float32, s *directScratch) {
	if l := &dr.nw.plan.layers[j]; l.ws {
		s.wsAcc = standardiseBack(v, dr.wp[j], dr.inv[j], l.d, l.k, s.wsAcc)
	}
}

// in returns op i's input buffer (whole chunk).
func (dr *direct) in(i int) []float32 {
	if src := dr.ops[i].src; src >= 0 {
		return dr.out[src]
	}
	return dr.x
}

// dy returns the gradient of the summed loss with respect to op i's output (whole chunk).
func (dr *direct) dy(i int) []float32 { return dr.dout[i] }

// load copies samples [start+lo, start+lo+m) of b into the chunk input in NHWC.
func (dr *direct) load(b Batch, start, lo, m int) {
	nw := dr.nw
	d := nw.inDim
	src := b.X[(start+lo)*d : (start+lo+m)*d]
	dst := dr.x[lo*d : (lo+m)*d]
	if in := nw.res.input; len(in) == 3 && in[0] > 1 {
		for s := 0; s < m; s++ {
			transpose(src[s*d:(s+1)*d], dst[s*d:(s+1)*d], in[0], in[1]*in[2])
		}
		return
	}
	copy(dst, src)
}

// gemm computes c = op(a)·op(b) + beta·c on row-major matrices with the given shapes (before
// the op).
func gemm(ta, tb blas.Transpose, ar, ac int, a []float32, br, bc int, b []float32, beta float32, cr, cc int, c []float32) {
	blas32.Gemm(ta, tb, 1, general(ar, ac, a), general(br, bc, b), beta, general(cr, cc, c))
}

// alignedF32 returns n zeroed float32s starting on a 64-byte boundary (a cache line, and the
// widest vector load of any BLAS kernel), so that a per-example BLAS call sees its operands at
// the same alignment whatever the example's slot. Go's heap does not move objects.
func alignedF32(n int) []float32 {
	b := make([]float32, n+16)
	off := int((64-uintptr(unsafe.Pointer(unsafe.SliceData(b)))%64)%64) / 4
	return b[off : off+n : off+n]
}

// alignedF64 is alignedF32 for float64s.
func alignedF64(n int) []float64 {
	b := make([]float64, n+8)
	off := int((64-uintptr(unsafe.Pointer(unsafe.SliceData(b)))%64)%64) / 8
	return b[off : off+n : off+n]
}

// gemvRows writes row k of dst (out values a row) = op(w)·(row k of src, n values a row) for
// the m rows, one gemv of a fixed shape per row on the worker's aligned copies (see the type
// comment): the path of dense layers on a CPU without AVX2 and FMA.
func gemvRows(t blas.Transpose, w blas32.General, src []float32, n int, dst []float32, out, m int, s *directScratch) {
	in, res := s.vin[:n], s.vout[:out]
	for k := 0; k < m; k++ {
		copy(in, src[k*n:(k+1)*n])
		blas32.Gemv(t, 1, w, vector(in), 0, vector(res))
		copy(dst[k*out:(k+1)*out], res)
	}
}

// vector is the float32 vector with unit increment on all of v.
func vector(v []float32) blas32.Vector { return blas32.Vector{N: len(v), Inc: 1, Data: v} }

// forward runs the ops on the block of m samples starting at lo.
func (dr *direct) forward(lo, m int, s *directScratch) {
	params := dr.nw.params
	for i := range dr.ops {
		o := &dr.ops[i]
		is, os := o.inSize(), o.outSize()
		x := dr.in(i)[lo*is : (lo+m)*is]
		y := dr.out[i][lo*os : (lo+m)*os]
		switch o.kind {
		case opDense:
			l := &dr.nw.plan.layers[o.p]
			// zₖ = Wᵀxₖ for each sample alone (see the type comment).
			if dr.fma {
				w, kp := params[l.w:l.w+l.d*l.k], l.k
				if f := dr.fw[o.p]; f != nil {
					w, kp = f, kernels.Pad16(l.k)
				}
				kernels.DenseRows(x, is, w, kp, y, os, m, l.d, l.k, s.dense)
			} else {
				gemvRows(blas.Trans, general(l.d, l.k, params[l.w:]), x, is, y, os, m, s)
			}
			if l.b >= 0 {
				addBias(y, params[l.b:l.b+l.k])
			}
		case opConv:
			l := &dr.nw.plan.layers[o.p]
			r, d := l.rows(), l.d
			pt := dr.patch[o.p][lo*r*d : (lo+m)*r*d]
			if dr.dn != nil {
				// Zₖ by oneDNN, one image a call; the patches only where a later stage reads them.
				for k := 0; k < m && s.err == nil; k++ {
					s.err = dr.dn.forward(o.p, s.dn, dr.wp[o.p], x[k*is:(k+1)*is], y[k*os:(k+1)*os])
					if dr.patches[o.p] {
						o.conv.im2col(x[k*is:(k+1)*is], pt[k*r*d:(k+1)*r*d])
					}
				}
				if l.b >= 0 {
					addBias(y, params[l.b:l.b+l.k])
				}
				continue
			}
			for k := 0; k < m; k++ {
				// Zₖ = PₖŴ, one call of a fixed shape per sample (see the type comment).
				o.conv.im2col(x[k*is:(k+1)*is], pt[k*r*d:(k+1)*r*d])
				gemm(blas.NoTrans, blas.NoTrans, r, d, pt[k*r*d:(k+1)*r*d], d, l.k, dr.wp[o.p], 0, r, l.k, y[k*os:(k+1)*os])
			}
			if l.b >= 0 {
				addBias(y, params[l.b:l.b+l.k])
			}
		case opAct:
			if o.relu {
				for t, v := range x {
					y[t] = max(v, 0) // NaN stays NaN (Go's max), as actOp
				}
			} else {
				for t, v := range x {
					y[t] = math32.Tanh(v)
				}
			}
		case opMaxPool:
			a := dr.arg[i][lo*os : (lo+m)*os]
			for k := 0; k < m; k++ {
				if o.pool.k == 2 && o.pool.s == 1 {
					o.pool.max2Forward(x[k*is:(k+1)*is], y[k*os:(k+1)*os], a[k*os:(k+1)*os], s.max2, s.key)
				} else {
					o.pool.maxForward(x[k*is:(k+1)*is], y[k*os:(k+1)*os], a[k*os:(k+1)*os], s.key)
				}
			}
		case opAvgPool:
			for k := 0; k < m; k++ {
				o.pool.avgForward(x[k*is:(k+1)*is], y[k*os:(k+1)*os])
			}
		case opGN:
			l := &dr.nw.plan.layers[o.p]
			gamma, beta := params[l.w:l.w+l.c], params[l.b:l.b+l.c]
			st := dr.stat[i][lo*l.c : (lo+m)*l.c]
			xh := dr.hatG[i][lo*os : (lo+m)*os]
			for k := 0; k < m; k++ {
				o.gn.forward(x[k*is:(k+1)*is], xh[k*os:(k+1)*os], y[k*os:(k+1)*os], gamma, beta, st[k*l.c:(k+1)*l.c], s.gn64)
			}
		case opAddSave:
			addInto(y, x, dr.out[o.src2][lo*os:(lo+m)*os])
		case opFlatten:
			// NHWC to the graph's (channel, row, column) order, which the dense weights index.
			for k := 0; k < m; k++ {
				transpose(x[k*is:(k+1)*is], y[k*os:(k+1)*os], o.ih*o.iw, o.ic)
			}
		}
	}
}

// addBias adds bias to every row of y.
func addBias(y, bias []float32) {
	k := len(bias)
	for r := 0; r < len(y); r += k {
		row := y[r : r+k]
		for c, v := range bias {
			row[c] += v
		}
	}
}

// loss scores the block's logits against the labels into st (and pred) and, when grad is set,
// writes the gradient of the summed softmax cross-entropy, softmax(z) − onehot(y), to gl.
func (dr *direct) loss(b Batch, start, lo, m int, grad bool, st *Stats, pred []int32) {
	c := dr.nw.res.classes
	logits := dr.out[len(dr.ops)-1]
	for k := lo; k < lo+m; k++ {
		row := logits[k*c : (k+1)*c]
		y := -1
		if b.Y != nil {
			y = int(b.Y[start+k])
		}
		best := scoreRow(row, y, st)
		if pred != nil {
			pred[start+k] = int32(best)
		}
		if !grad {
			continue
		}
		lse := logSumExp(row)
		g := dr.gl[k*c : (k+1)*c]
		for j, v := range row {
			p := math.Exp(float64(v) - lse)
			if j == y {
				p--
			}
			g[j] = float32(p)
		}
	}
	st.N += m
}

// backward computes, for the block, the gradient with respect to every tensor that depends on
// parameters, which leaves each parameter layer's G = ∂L/∂Z in dy of its op, and each GroupNorm
// layer's per-sample γ and β gradients in gnG.
func (dr *direct) backward(lo, m int, s *directScratch) {
	params := dr.nw.params
	for i := len(dr.ops) - 1; i >= 0; i-- {
		o := &dr.ops[i]
		is, os := o.inSize(), o.outSize()
		if o.kind == opAddSave {
			dy := dr.dy(i)[lo*os : (lo+m)*os]
			for _, t := range [...]struct {
				src       int
				prop, acc bool
			}{{o.src, o.prop, o.acc}, {o.src2, o.prop2, o.acc2}} {
				if !t.prop {
					continue
				}
				dx := dr.dout[t.src][lo*is : (lo+m)*is]
				if t.acc {
					addInto(dx, dy, nil)
				} else {
					copy(dx, dy)
				}
			}
			continue
		}
		if o.kind == opGN {
			l := &dr.nw.plan.layers[o.p]
			xh := dr.hatG[i][lo*os : (lo+m)*os]
			dy := dr.dy(i)[lo*os : (lo+m)*os]
			st := dr.stat[i][lo*l.c : (lo+m)*l.c]
			pg := dr.gnG[o.p][lo*2*l.c : (lo+m)*2*l.c]
			for k := 0; k < m; k++ {
				var dx []float32
				if o.prop {
					dx = dr.dout[o.src][(lo+k)*is : (lo+k+1)*is]
				}
				o.gn.backward(xh[k*os:(k+1)*os], dy[k*os:(k+1)*os], params[l.w:l.w+l.c], st[k*l.c:(k+1)*l.c],
					pg[k*2*l.c:k*2*l.c+l.c], pg[k*2*l.c+l.c:(k+1)*2*l.c], dx, o.acc, s.gn64, s.gn32)
			}
			continue
		}
		if !o.prop {
			continue
		}
		dy := dr.dy(i)[lo*os : (lo+m)*os]
		// An op whose kernel writes its input gradient writes it to scratch when it must be
		// added to what a later reader wrote (conv and pooling kernels add to a zeroed buffer,
		// so they add directly).
		writes := o.kind == opDense || o.kind == opAct || o.kind == opFlatten
		dx := dr.dout[o.src][lo*is : (lo+m)*is]
		if o.acc && writes {
			dx = s.accum[:m*is]
		}
		switch o.kind {
		case opDense:
			l := &dr.nw.plan.layers[o.p]
			// ∂L/∂xₖ = W·gₖ for each sample alone.
			if dr.fma {
				kernels.DenseRows(dy, os, dr.bw[o.p], kernels.Pad16(l.d), dx, is, m, l.k, l.d, s.dense)
			} else {
				gemvRows(blas.NoTrans, general(l.d, l.k, params[l.w:]), dy, os, dx, is, m, s)
			}
		case opConv:
			l := &dr.nw.plan.layers[o.p]
			r, d := l.rows(), l.d
			if dr.dn != nil {
				// ∂L/∂xₖ by oneDNN, one image a call, added through scratch where a later
				// reader wrote the gradient already.
				for k := 0; k < m && s.err == nil; k++ {
					dxk := dx[k*is : (k+1)*is]
					if o.acc {
						dxk = s.accum[:is]
					}
					s.err = dr.dn.backwardData(o.p, s.dn, dr.wp[o.p], dy[k*os:(k+1)*os], dxk)
					if o.acc {
						addInto(dx[k*is:(k+1)*is], dxk, nil)
					}
				}
				break
			}
			dp, gin := s.dp[:r*d], s.gin[:r*l.k]
			if !o.acc {
				clear(dx)
			}
			for k := 0; k < m; k++ {
				// ∂L/∂Pₖ = GₖŴᵀ, one call of a fixed shape per sample on aligned copies, then
				// back to the image.
				copy(gin, dy[k*os:(k+1)*os])
				gemm(blas.NoTrans, blas.Trans, r, l.k, gin, d, l.k, dr.wp[o.p], 0, r, d, dp)
				o.conv.col2im(dp, dx[k*is:(k+1)*is])
			}
		case opAct:
			if o.relu {
				x := dr.in(i)[lo*is : (lo+m)*is]
				for t, v := range x {
					// Keep the gradient where x's sign bit is clear, as actDiffOp.
					keep := uint32(int32(^math.Float32bits(v)) >> 31)
					dx[t] = math.Float32frombits(math.Float32bits(dy[t]) & keep)
				}
			} else {
				y := dr.out[i][lo*os : (lo+m)*os]
				for t, v := range y {
					dx[t] = (1 - v*v) * dy[t]
				}
			}
		case opMaxPool:
			if !o.acc {
				clear(dx)
			}
			a := dr.arg[i][lo*os : (lo+m)*os]
			for k := 0; k < m; k++ {
				maxBackward(a[k*os:(k+1)*os], dy[k*os:(k+1)*os], dx[k*is:(k+1)*is])
			}
		case opAvgPool:
			if !o.acc {
				clear(dx)
			}
			for k := 0; k < m; k++ {
				o.pool.avgBackward(dy[k*os:(k+1)*os], dx[k*is:(k+1)*is])
			}
		case opFlatten:
			for k := 0; k < m; k++ {
				transpose(dy[k*os:(k+1)*os], dx[k*is:(k+1)*is], o.ic, o.ih*o.iw)
			}
		}
		if o.acc && writes {
			addInto(dr.dout[o.src][lo*is:(lo+m)*is], s.accum[:m*is], nil)
		}
	}
}

// layerAG returns parameter op i's A and G rows for samples [lo, lo+m).
func (dr *direct) layerAG(i, lo, m int) (a, g []float32, l *pLayer) {
	o := &dr.ops[i]
	l = &dr.nw.plan.layers[o.p]
	r := l.rows()
	if o.kind == opConv {
		a = dr.patch[o.p][lo*r*l.d : (lo+m)*r*l.d]
	} else {
		a = dr.in(i)[lo*l.d : (lo+m)*l.d]
	}
	return a, dr.dy(i)[lo*r*l.k : (lo+m)*r*l.k], l
}

// keepSample reports whether a layer's per-sample gradients are materialised for its norms
// (a conv layer where that is cheaper than the Gram identity, see LayerGeometry.useGram) and
// small enough to keep for a block: the block's clipped sum is then Σ c_i·(P_iᵀG_i) from the
// kept products, and the layer needs no second GEMM.
//
// A standardised conv layer is always kept: its norm is that of the mapped-back gradient, which
// the Gram identity does not give, and the clipped sum must hold the very vectors whose norms
// gave the clip factors (ws.go). With oneDNN every conv layer small enough is kept: its
// backward-weights primitive materialises an example's gradient for less than the Gram
// identity costs in float64 (ResNet-20's 8×8 stage).
func (dr *direct) keepSample(l *pLayer) bool {
	if l.kind != kindConv {
		return false
	}
	return l.ws || (dr.dn != nil || !l.geometry().UseGram()) && dr.block*l.d*l.k <= 1<<20
}

// clipBlock computes the block's per-sample gradient norms (into norms when set) and clip
// factors, scales each sample's G rows by its factor where a GEMM then sums them, and writes the
// block's conv weight and bias gradients, Σ_i c_i·P_iᵀG_i, to part. A sample whose norm is not
// finite is clipped to zero (ClipScale): its A and G rows are zeroed in every parameter layer,
// so that no NaN or Inf of it reaches a sum, and it is counted in st.NonFinite.
func (dr *direct) clipBlock(start, lo, m int, clip float64, needNorms bool, norms []float64, part []float64, st *Stats, s *directScratch) error {
	if needNorms {
		sq := dr.sq[lo : lo+m]
		clear(sq)
		for i := range dr.ops {
			if dr.ops[i].kind == opGN {
				l := &dr.nw.plan.layers[dr.ops[i].p]
				for e, v := range dr.gnG[dr.ops[i].p][lo*2*l.c : (lo+m)*2*l.c] {
					sq[e/(2*l.c)] += float64(v) * float64(v)
				}
				continue
			}
			if k := dr.ops[i].kind; k != opDense && k != opConv {
				continue
			}
			a, g, l := dr.layerAG(i, lo, m)
			if dr.keepSample(l) {
				if err := dr.materialise(sq, a, g, i, lo, s); err != nil {
					return fmt.Errorf("layer %s: %w", l.name, err)
				}
				continue
			}
			if l.kind == kindConv {
				// The block's P and G in float64 once, for the norms and the clipped sum.
				geo := l.geometry()
				r, d, k := geo.Rows, geo.In, geo.Out
				j := dr.ops[i].p
				s.blk64[j] = kernels.GrowF64(s.blk64[j], m*r*(d+k))
				p64, g64 := s.blk64[j][:m*r*d], s.blk64[j][m*r*d:m*r*(d+k)]
				toF64(p64, a)
				toF64(g64, g)
				s.norm64 = kernels.GrowF64(s.norm64, 2*r*r+d*k)
				gram := geo.UseGram()
				// Each example's P and G from the same aligned place (see alignedF32).
				if len(s.one64) < r*(d+k) {
					s.one64 = alignedF64(r * (d + k))
				}
				p1, g1 := s.one64[:r*d], s.one64[r*d:r*(d+k)]
				for e := range sq {
					copy(p1, p64[e*r*d:(e+1)*r*d])
					copy(g1, g64[e*r*k:(e+1)*r*k])
					sq[e] += convSquaredNorm64(p1, g1, geo, gram, s.norm64)
				}
				continue
			}
			var err error
			if s.norm, s.norm64, err = squaredNorms(sq, a, g, l.geometry(), s.norm, s.norm64); err != nil {
				return fmt.Errorf("layer %s: %w", l.name, err)
			}
		}
		for k, v := range sq {
			norm := math.Sqrt(v)
			if norms != nil {
				norms[start+lo+k] = norm
			}
			c, clipped, bad := ClipScale(clip, norm)
			dr.scale[lo+k] = c
			if clipped {
				st.Clipped++
			}
			if bad {
				st.NonFinite++
				dr.dropSample(lo + k)
			}
		}
	}
	for i := range dr.ops {
		if dr.ops[i].kind == opGN {
			// Σ_i c_i·(∇γ_i, ∇β_i), in sample order; a dropped sample has c_i = 0.
			j := dr.ops[i].p
			c2 := 2 * dr.nw.plan.layers[j].c
			sum := part[dr.partOff[j] : dr.partOff[j]+c2]
			clear(sum)
			for k := range m {
				c := float32(1)
				if needNorms {
					if c = dr.scale[lo+k]; c == 0 {
						continue
					}
				}
				for t, v := range dr.gnG[j][(lo+k)*c2 : (lo+k+1)*c2] {
					sum[t] += float64(c * v)
				}
			}
			continue
		}
		if k := dr.ops[i].kind; k != opDense && k != opConv {
			continue
		}
		a, g, l := dr.layerAG(i, lo, m)
		j := dr.ops[i].p
		if needNorms && dr.keepSample(l) {
			// Σ_i c_i·W_i over the kept per-sample gradients, in sample order.
			off, dk := dr.partOff[j], l.d*l.k
			w, b := part[off:off+dk], part[off+dk:]
			clear(w)
			if l.b >= 0 {
				clear(b[:l.k])
			}
			for k, c := range dr.scale[lo : lo+m] {
				if c == 0 {
					continue // clipped to zero: its product may hold NaN
				}
				for t, v := range s.mat[j][k*dk : (k+1)*dk] {
					w[t] += float64(c * v)
				}
				if l.b >= 0 {
					for t, v := range s.bias[j][k*l.k : (k+1)*l.k] {
						b[t] += float64(c * v)
					}
				}
			}
			continue
		}
		if l.kind != kindConv {
			// Dense: G scaled here, summed by the chunk's GEMM (chunk), in float64 when the
			// sum is clipped: the block's A and scaled G are converted here, while they are in
			// this core's cache.
			if needNorms {
				for k, c := range dr.scale[lo : lo+m] {
					if c != 1 {
						blas32.Scal(c, blas32.Vector{N: l.k, Inc: 1, Data: g[k*l.k:]})
					}
				}
			}
			if !math.IsInf(clip, 1) {
				toF64(dr.a64[i][lo*l.d:(lo+m)*l.d], a)
				toF64(dr.g64d[i][lo*l.k:(lo+m)*l.k], g)
			}
			continue
		}
		off, dk := dr.partOff[j], l.d*l.k
		if !needNorms {
			// No clipping (clip = +Inf, no norms asked for): nothing is released privately,
			// one float32 GEMM.
			s.wtmp = kernels.Grow(s.wtmp, dk+l.k)
			w := s.wtmp[:dk]
			gemm(blas.Trans, blas.NoTrans, m*l.rows(), l.d, a, m*l.rows(), l.k, g, 0, l.d, l.k, w)
			dr.standardiseBack(j, w, s) // linear: the sum maps back as a whole
			for t, v := range w {
				part[off+t] = float64(v)
			}
			if l.b >= 0 {
				b := s.wtmp[dk : dk+l.k]
				columnSums(b, g, l.k)
				for t, v := range b {
					part[off+dk+t] = float64(v)
				}
			}
			continue
		}
		// Σ_i c_i·P_iᵀG_i and Σ_i c_i·G_iᵀ1, scaled and accumulated in float64 from the
		// block's float64 copies (see addProducts64); a dropped sample has c_i = 0.
		var gb []float64
		if l.b >= 0 {
			gb = part[off+dk : off+dk+l.k]
			clear(gb)
		}
		clear(part[off : off+dk])
		sumProducts64(part[off:off+dk], gb, s.blk64[j], dr.scale[lo:lo+m], l.geometry())
	}
	return nil
}

// dropSample zeroes sample i's (chunk index) rows of A and G in every parameter layer, so that
// the clipped-sum GEMMs over the chunk get exactly 0 from it whatever its values were (the
// float64 copies of conv layers are skipped by their zero scale instead).
func (dr *direct) dropSample(i int) {
	for oi := range dr.ops {
		if o := &dr.ops[oi]; o.kind == opGN {
			clear(dr.gnG[o.p][i*2*o.oc : (i+1)*2*o.oc])
			continue
		}
		if k := dr.ops[oi].kind; k != opDense && k != opConv {
			continue
		}
		a, g, _ := dr.layerAG(oi, i, 1)
		clear(a)
		clear(g)
	}
}

// materialise writes each of the block's per-sample gradients of conv op oi's weights,
// P_iᵀG_i (mapped back through the standardisation where the layer has one), to s.mat[j] and its
// bias gradients G_iᵀ1 to s.bias[j], and adds their squared norms to sq, with the arithmetic of
// SquaredNorms' materialising path; with oneDNN, P_iᵀG_i is its backward-weights primitive on
// the example's input (the block's samples start at lo).
func (dr *direct) materialise(sq []float64, a, g []float32, oi, lo int, s *directScratch) error {
	o := &dr.ops[oi]
	j := o.p
	l := &dr.nw.plan.layers[j]
	mat, bias := s.mat[j], s.bias[j]
	r, d, k := l.rows(), l.d, l.k
	for i := range sq {
		w := mat[i*d*k : (i+1)*d*k]
		if dr.dn != nil && !dr.patches[j] {
			is := o.inSize()
			if err := dr.dn.backwardWeights(j, s.dn, dr.in(oi)[(lo+i)*is:(lo+i+1)*is], g[i*r*k:(i+1)*r*k], w); err != nil {
				return err
			}
		} else {
			gemm(blas.Trans, blas.NoTrans, r, d, a[i*r*d:], r, k, g[i*r*k:], 0, d, k, w)
		}
		dr.standardiseBack(j, w, s)
		sq[i] += sumSq(w)
		if l.b >= 0 {
			cs := bias[i*k : (i+1)*k]
			columnSums(cs, g[i*r*k:(i+1)*r*k], k)
			sq[i] += sumSq(cs)
		}
	}
	return nil
}

// denseTask is one slice of a dense layer's clipped-gradient GEMM: weight rows [r0, r1) of
// op i's layer, and its bias when bias is set.
type denseTask struct {
	i, r0, r1 int
	bias      bool
}

// denseTasks lists the tasks of the chunk's dense-layer GEMMs, fixed by the network alone.
func (dr *direct) denseTasks() []denseTask {
	var ts []denseTask
	for i := range dr.ops {
		if dr.ops[i].kind != opDense {
			continue
		}
		l := &dr.nw.plan.layers[dr.ops[i].p]
		for r0 := 0; r0 < l.d; r0 += directSliceRows {
			ts = append(ts, denseTask{i: i, r0: r0, r1: min(r0+directSliceRows, l.d)})
		}
		if l.b >= 0 {
			ts = append(ts, denseTask{i: i, bias: true})
		}
	}
	return ts
}

// blocks runs samples [start, start+m) of b in blocks of directBlock on up to GOMAXPROCS
// goroutines: load, forward and loss, then, when after is not nil, the backward pass and
// after(block, first sample, samples, scratch). It adds the blocks' statistics to st in block
// order, returns the number of blocks, and the first block's error in block order.
func (dr *direct) blocks(b Batch, start, m int, after func(k, lo, mb int, s *directScratch) error, st *Stats, pred []int32) (int, error) {
	nb := (m + dr.block - 1) / dr.block
	for k := range nb {
		dr.stats[k], dr.errs[k] = Stats{}, nil
	}
	dr.parallel(nb, func(k, w int) {
		s := &dr.work[w]
		if s.err = s.dnErr; s.err != nil {
			dr.errs[k] = s.err
			return
		}
		lo := k * dr.block
		mb := min(dr.block, m-lo)
		dr.load(b, start, lo, mb)
		dr.forward(lo, mb, s)
		dr.loss(b, start, lo, mb, after != nil, &dr.stats[k], pred)
		if after != nil && s.err == nil {
			dr.backward(lo, mb, s)
			if s.err == nil {
				dr.errs[k] = after(k, lo, mb, s)
			}
		}
		if s.err != nil {
			dr.errs[k] = s.err
		}
	})
	for k := range nb {
		if dr.errs[k] != nil {
			return nb, dr.errs[k]
		}
		st.Add(dr.stats[k])
	}
	return nb, nil
}

// chunk runs samples [start, start+m) of b: forward (and with grad the backward pass and
// clipping), adding the chunk's loss and accuracy to st, predictions to pred, and the clipped
// gradient sum to grad.
func (dr *direct) chunk(b Batch, start, m int, grad []float32, clip float64, needNorms bool, norms []float64, st *Stats, pred []int32) error {
	var after func(k, lo, mb int, s *directScratch) error
	if grad != nil {
		after = func(k, lo, mb int, s *directScratch) error {
			return dr.clipBlock(start, lo, mb, clip, needNorms, norms, dr.part[k], &dr.stats[k], s)
		}
	}
	nb, err := dr.blocks(b, start, m, after, st, pred)
	if err != nil || grad == nil {
		return err
	}
	// Conv and GroupNorm layers: the blocks' float64 partial sums in block order, back to
	// parameter row order.
	g64 := dr.g64
	for j, off := range dr.partOff {
		if off < 0 {
			continue
		}
		l := &dr.nw.plan.layers[j]
		if l.kind == kindGN {
			for k := range nb {
				for c, v := range dr.part[k][off : off+l.c] {
					g64[l.w+c] += v
				}
				for c, v := range dr.part[k][off+l.c : off+2*l.c] {
					g64[l.b+c] += v
				}
			}
			continue
		}
		for r, pr := range dr.perm[j] {
			dst := g64[l.w+int(pr)*l.k : l.w+int(pr+1)*l.k]
			for k := range nb {
				for c, v := range dr.part[k][off+r*l.k : off+(r+1)*l.k] {
					dst[c] += v
				}
			}
		}
		if l.b >= 0 {
			dst := g64[l.b : l.b+l.k]
			for k := range nb {
				for c, v := range dr.part[k][off+l.d*l.k : off+l.d*l.k+l.k] {
					dst[c] += v
				}
			}
		}
	}
	// Dense layers: Aᵀ·G over the chunk (G already scaled), in float64, one task per slice of
	// the weight's rows.
	tasks := dr.denseTasks()
	dr.parallel(len(tasks), func(t, w int) {
		tk := tasks[t]
		a, g, l := dr.layerAG(tk.i, 0, m)
		s := &dr.work[w]
		if tk.bias {
			dst := g64[l.b : l.b+l.k]
			for r := 0; r < m; r++ {
				for c, v := range g[r*l.k : (r+1)*l.k] {
					dst[c] += float64(v)
				}
			}
			return
		}
		cols := tk.r1 - tk.r0
		if math.IsInf(clip, 1) {
			// No clipping: nothing is released privately, so the product may round in
			// float32.
			s.wtmp = kernels.Grow(s.wtmp, cols*l.k)
			w := s.wtmp[:cols*l.k]
			blas32.Gemm(blas.Trans, blas.NoTrans, 1, blas32.General{Rows: m, Cols: cols, Stride: l.d, Data: a[tk.r0:]},
				general(m, l.k, g), 0, general(cols, l.k, w))
			for t, v := range w {
				g64[l.w+tk.r0*l.k+t] += float64(v)
			}
			return
		}
		blas64.Gemm(blas.Trans, blas.NoTrans, 1, blas64.General{Rows: m, Cols: cols, Stride: l.d, Data: dr.a64[tk.i][tk.r0:]},
			blas64.General{Rows: m, Cols: l.k, Stride: l.k, Data: dr.g64d[tk.i][:m*l.k]}, 1,
			blas64.General{Rows: cols, Cols: l.k, Stride: l.k, Data: g64[l.w+tk.r0*l.k : l.w+tk.r1*l.k]})
	})
	return nil
}

// setPatches decides which conv layers' patch matrices the forward pass writes for a pass that
// computes gradients (grad) and per-example norms (needNorms): every one without oneDNN; with
// it, only those that a norm by the Gram identity or an unclipped sum reads (materialise and
// sampleGrad take oneDNN's backward-weights result instead).
func (dr *direct) setPatches(grad, needNorms bool) {
	if dr.patches == nil {
		dr.patches = make([]bool, len(dr.nw.plan.layers))
	}
	for j := range dr.patches {
		l := &dr.nw.plan.layers[j]
		dr.patches[j] = dr.dn == nil || grad && !(needNorms && dr.keepSample(l))
	}
}

// run processes b in chunks of at most the network's Chunk samples.
func (dr *direct) run(b Batch, grad []float32, clip float64, needNorms bool, norms []float64, pred []int32) (Stats, error) {
	var st Stats
	dr.alloc(min(dr.nw.res.chunk, max(b.N, 1)))
	if err := dr.refreshWeights(); err != nil {
		return Stats{}, err
	}
	dr.setPatches(grad != nil, needNorms)
	if grad != nil {
		dr.g64 = kernels.GrowF64(dr.g64, len(grad))
		clear(dr.g64)
	}
	for start := 0; start < b.N; start += dr.nw.res.chunk {
		m := min(dr.nw.res.chunk, b.N-start)
		if err := dr.chunk(b, start, m, grad, clip, needNorms, norms, &st, pred); err != nil {
			return Stats{}, err
		}
	}
	if grad != nil {
		// The sum's one rounding to float32.
		for t, v := range dr.g64 {
			grad[t] = float32(v)
		}
	}
	return st, nil
}

// perSample is PerSampleGradSum on the direct executor: each block's samples are materialised
// one at a time on the block's goroutine (a_i g_iᵀ for dense layers, P_iᵀG_i for conv layers,
// G_i's column sums for biases), passed to f, and summed into the block's partial sum; the
// partial sums are added in block order, so the result does not depend on the number of
// workers. f is called from several goroutines at once, for different samples. A sample whose
// gradient is not finite is skipped (clipped to zero) and counted in Stats.NonFinite.
func (dr *direct) perSample(b Batch, f func(i int, g []float32), grad []float32) (Stats, error) {
	var st Stats
	np := len(dr.nw.params)
	dr.alloc(min(dr.nw.res.chunk, max(b.N, 1)))
	if err := dr.refreshWeights(); err != nil {
		return Stats{}, err
	}
	dr.setPatches(false, false) // sampleGrad reads the patches only without oneDNN
	dr.g64 = kernels.GrowF64(dr.g64, np)
	clear(dr.g64)
	nbMax := len(dr.part)
	if len(dr.psum) < nbMax || (nbMax > 0 && len(dr.psum[0]) != np) {
		dr.psum = make([][]float64, nbMax)
		for k := range dr.psum {
			dr.psum[k] = make([]float64, np)
		}
	}
	for start := 0; start < b.N; start += dr.nw.res.chunk {
		m := min(dr.nw.res.chunk, b.N-start)
		nb, err := dr.blocks(b, start, m, func(k, lo, mb int, s *directScratch) error {
			s.sample = kernels.Grow(s.sample, np)
			sum := dr.psum[k]
			clear(sum)
			for i := lo; i < lo+mb && s.err == nil; i++ {
				g := s.sample[:np]
				if sq := dr.sampleGrad(i, g, s); math.IsNaN(sq) || math.IsInf(sq, 0) {
					dr.stats[k].NonFinite++ // clipped to zero
					continue
				}
				if f != nil {
					f(start+i, g)
				}
				for t, v := range g {
					sum[t] += float64(v)
				}
			}
			return s.err
		}, &st, nil)
		if err != nil {
			return Stats{}, err
		}
		for k := range nb {
			for t, v := range dr.psum[k] {
				dr.g64[t] += v
			}
		}
	}
	for t, v := range dr.g64 {
		grad[t] = float32(v)
	}
	return st, nil
}

// sampleGrad writes sample i's gradient (i indexes the chunk) into g, laid out like the
// parameters, and returns its squared norm, +Inf if some element is not finite. The norm is
// assembled from the layers' pieces: a dense layer's weight gradient a_i g_iᵀ has squared norm
// ‖a_i‖²‖g_i‖², and an element overflows float32 exactly when max|a|·max|g| does; a conv layer's
// materialised P_iᵀG_i is summed. So no pass over the whole of g is needed to check it.
func (dr *direct) sampleGrad(i int, g []float32, s *directScratch) float64 {
	var sq float64
	for oi := range dr.ops {
		if o := &dr.ops[oi]; o.kind == opGN {
			l := &dr.nw.plan.layers[o.p]
			pg := dr.gnG[o.p][i*2*l.c : (i+1)*2*l.c]
			copy(g[l.w:l.w+l.c], pg[:l.c])
			copy(g[l.b:l.b+l.c], pg[l.c:])
			sq += sumSq(pg) // NaN or +Inf when an element is not finite
			continue
		}
		if k := dr.ops[oi].kind; k != opDense && k != opConv {
			continue
		}
		a, gz, l := dr.layerAG(oi, i, 1)
		if l.kind == kindDense {
			for r, av := range a {
				row := g[l.w+r*l.k : l.w+(r+1)*l.k]
				for c, gv := range gz {
					row[c] = av * gv
				}
			}
			if maxAbs(a)*maxAbs(gz) > math.MaxFloat32 {
				return math.Inf(1)
			}
			sq += sumSq(a) * sumSq(gz)
		} else {
			// P_iᵀG_i in patch row order (oneDNN's backward weights with engine dnnl, as
			// materialise), then back to parameter row order.
			s.wtmp = kernels.Grow(s.wtmp, l.d*l.k)
			if dr.dn != nil {
				is := dr.ops[oi].inSize()
				if err := dr.dn.backwardWeights(dr.ops[oi].p, s.dn, dr.in(oi)[i*is:(i+1)*is], gz, s.wtmp[:l.d*l.k]); err != nil {
					s.err = err
					return math.Inf(1)
				}
			} else {
				gemm(blas.Trans, blas.NoTrans, l.rows(), l.d, a, l.rows(), l.k, gz, 0, l.d, l.k, s.wtmp)
			}
			dr.standardiseBack(dr.ops[oi].p, s.wtmp[:l.d*l.k], s)
			for r, pr := range dr.perm[dr.ops[oi].p] {
				copy(g[l.w+int(pr)*l.k:l.w+int(pr+1)*l.k], s.wtmp[r*l.k:(r+1)*l.k])
			}
			sq += sumSq(s.wtmp[:l.d*l.k])
		}
		if l.b >= 0 {
			columnSums(g[l.b:l.b+l.k], gz, l.k)
			sq += sumSq(g[l.b : l.b+l.k])
		}
	}
	return sq
}

// maxAbs is the largest |v| in s as a float64 (NaN if s holds a NaN).
func maxAbs(s []float32) float64 {
	var m float64
	for _, v := range s {
		m = max(m, math.Abs(float64(v)))
	}
	return m
}
