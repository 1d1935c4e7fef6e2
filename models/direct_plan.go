package models

import (
	"unsafe"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/kernels"
	"github.com/dptrain/dptrain/models/internal/core"
)

// The direct executor's plan: the op list a network's plan becomes, and the buffers and
// per-worker scratch sized for a chunk.

// dOp is one op of the direct executor with its per-sample input and output shapes as
// (h, w, c); a vector of n features is 1×1×n. Ops are in forward (topological) order; each reads
// the output of op src (-1: the chunk's input), and an add op also that of src2.
type dOp struct {
	kind                   core.OpKind
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

func (o *dOp) inSize() int { return o.ih * o.iw * o.ic }

func (o *dOp) outSize() int { return o.oh * o.ow * o.oc }

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
		d := dOp{kind: o.Kind, p: o.Layer, src: cur, src2: -1, ih: h, iw: w, ic: c}
		switch o.Kind {
		case opDense:
			l := &p.layers[o.Layer]
			if h*w*c != l.d {
				return nil
			}
			h, w, c = 1, 1, l.k
		case opConv:
			if !conv(o.Layer, cur) {
				return nil
			}
			cur = len(dr.ops) - 1
			continue
		case opGN:
			if !gn(o.Layer, cur) {
				return nil
			}
			cur = len(dr.ops) - 1
			continue
		case opMaxPool, opAvgPool:
			if len(o.Out) != 3 {
				return nil
			}
			d.pool = poolGeom{h: h, w: w, c: c, k: o.Kernel, s: o.Stride, oh: o.Out[1], ow: o.Out[2]}
			h, w = o.Out[1], o.Out[2]
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
			if o.Act != "tanh" && o.Act != "relu" {
				return nil
			}
			d.relu = o.Act == "relu"
		case opSave:
			saved = append(saved, cur)
			continue
		case opAddSave:
			sc := saved[len(saved)-1]
			saved = saved[:len(saved)-1]
			if o.Proj >= 0 {
				if !conv(o.Proj, sc) || !gn(o.ProjGN, len(dr.ops)-1) {
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
		if d.outSize() != core.Prod(o.Out) {
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
	dr.stats, dr.errs = make([]data.Stats, nb), make([]error, nb)
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

// refreshWeights copies the conv weights into patch row order, standardised
// (models/internal/core/ws.go) where the layer is: the forward and backward passes then run on
// Ŵ, and wp is the Ŵ that maps gradients back (standardiseBack is the same map whatever the
// order of a column's rows). With oneDNN, it also lays them out for its primitives.
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
			core.Standardise(src, dr.hat[j], dr.inv[j], dr.mean, l.d, l.k)
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
