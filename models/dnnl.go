//go:build dnnl

package models

/*
#cgo LDFLAGS: -ldnnl -lgomp
#include <stdlib.h>
#include <string.h>
#include <oneapi/dnnl/dnnl.h>

// libgomp's; oneDNN runs its OpenMP regions on as many threads as this says.
extern void omp_set_num_threads(int);

// dp_prim is one oneDNN convolution primitive (forward, backward-data or backward-weights) at
// minibatch 1: its (diff_)weights descriptor in the format the primitive chose, the reorder
// between that format and hwio (NULL when it is hwio), and its scratchpad size.
typedef struct {
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t prim;
	dnnl_memory_desc_t wmd;
	dnnl_memory_desc_t smd; // scratchpad
	dnnl_primitive_t reorder;
	size_t wbytes, sbytes;
	const char *impl;
} dp_prim;

// dp_conv is one convolution shape's three primitives.
typedef struct {
	dnnl_memory_desc_t src, dst, hwio;
	dp_prim fwd, bwd_data, bwd_w;
} dp_conv;

// dp_exec is one worker's memory objects for one dp_conv: their data handles are set for each
// call, so workers never share one.
typedef struct {
	dnnl_stream_t st;
	dnnl_memory_t src, dst, wf, wd, dw, hwio, sf, sd, sw;
	void *scratch, *dwbuf; // scratchpad (largest of the three) and diff weights in bwd_w's format
} dp_exec;

static dnnl_engine_t dp_engine;

static dnnl_status_t dp_init(void) {
	if (dp_engine) return dnnl_success;
	return dnnl_engine_create(&dp_engine, dnnl_cpu, 0);
}

static dnnl_status_t dp_finish(dp_prim *p, const dnnl_op_desc_t desc, const_dnnl_primitive_desc_t hint, dnnl_query_t wq, const dnnl_memory_desc_t *hwio, int to_hwio) {
	dnnl_primitive_attr_t attr;
	dnnl_status_t s = dnnl_primitive_attr_create(&attr);
	if (s != dnnl_success) return s;
	s = dnnl_primitive_attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user);
	if (s == dnnl_success) s = dnnl_primitive_desc_create(&p->pd, desc, attr, dp_engine, hint);
	dnnl_primitive_attr_destroy(attr);
	if (s != dnnl_success) return s;
	p->wmd = *dnnl_primitive_desc_query_md(p->pd, wq, 0);
	p->smd = *dnnl_primitive_desc_query_md(p->pd, dnnl_query_scratchpad_md, 0);
	p->wbytes = dnnl_memory_desc_get_size(&p->wmd);
	p->sbytes = dnnl_memory_desc_get_size(&p->smd);
	dnnl_primitive_desc_query(p->pd, dnnl_query_impl_info_str, 0, &p->impl);
	s = dnnl_primitive_create(&p->prim, p->pd);
	if (s != dnnl_success) return s;
	p->reorder = NULL;
	if (dnnl_memory_desc_equal(&p->wmd, hwio)) return dnnl_success;
	dnnl_primitive_desc_t rpd;
	s = to_hwio ? dnnl_reorder_primitive_desc_create(&rpd, &p->wmd, dp_engine, hwio, dp_engine, NULL)
	            : dnnl_reorder_primitive_desc_create(&rpd, hwio, dp_engine, &p->wmd, dp_engine, NULL);
	if (s != dnnl_success) return s;
	s = dnnl_primitive_create(&p->reorder, rpd);
	dnnl_primitive_desc_destroy(rpd);
	return s;
}

// dp_conv_create makes the primitives of a k×k convolution with stride s and zero padding pad of
// one ih×iw×ic image (NHWC) to oh×ow×oc, weights hwio, no bias, float32, on one thread.
static dnnl_status_t dp_conv_create(dp_conv *c, int ih, int iw, int ic, int oh, int ow, int oc, int k, int s, int pad) {
	omp_set_num_threads(1);
	dnnl_status_t st = dp_init();
	if (st != dnnl_success) return st;
	dnnl_dims_t sd = {1, ic, ih, iw}, dd = {1, oc, oh, ow}, wd = {oc, ic, k, k};
	dnnl_dims_t strides = {s, s}, pl = {pad, pad};
	dnnl_dims_t pr = {(oh - 1) * s + k - ih - pad, (ow - 1) * s + k - iw - pad};
	dnnl_memory_desc_t wany;
	if ((st = dnnl_memory_desc_init_by_tag(&c->src, 4, sd, dnnl_f32, dnnl_nhwc)) != dnnl_success) return st;
	if ((st = dnnl_memory_desc_init_by_tag(&c->dst, 4, dd, dnnl_f32, dnnl_nhwc)) != dnnl_success) return st;
	if ((st = dnnl_memory_desc_init_by_tag(&c->hwio, 4, wd, dnnl_f32, dnnl_hwio)) != dnnl_success) return st;
	if ((st = dnnl_memory_desc_init_by_tag(&wany, 4, wd, dnnl_f32, dnnl_format_tag_any)) != dnnl_success) return st;
	dnnl_convolution_desc_t f, bd, bw;
	if ((st = dnnl_convolution_forward_desc_init(&f, dnnl_forward_training, dnnl_convolution_direct, &c->src, &wany, NULL, &c->dst, strides, pl, pr)) != dnnl_success) return st;
	if ((st = dp_finish(&c->fwd, &f, NULL, dnnl_query_weights_md, &c->hwio, 0)) != dnnl_success) return st;
	if ((st = dnnl_convolution_backward_data_desc_init(&bd, dnnl_convolution_direct, &c->src, &wany, &c->dst, strides, pl, pr)) != dnnl_success) return st;
	if ((st = dp_finish(&c->bwd_data, &bd, c->fwd.pd, dnnl_query_weights_md, &c->hwio, 0)) != dnnl_success) return st;
	if ((st = dnnl_convolution_backward_weights_desc_init(&bw, dnnl_convolution_direct, &c->src, &wany, NULL, &c->dst, strides, pl, pr)) != dnnl_success) return st;
	return dp_finish(&c->bwd_w, &bw, c->fwd.pd, dnnl_query_diff_weights_md, &c->hwio, 1);
}

static void *dp_alloc(size_t n) {
	void *p = NULL;
	if (posix_memalign(&p, 64, n ? n : 64) != 0) return NULL;
	memset(p, 0, n ? n : 64);
	return p;
}

static dnnl_status_t dp_exec_create(dp_exec *e, dp_conv *c) {
	dnnl_status_t s;
	memset(e, 0, sizeof *e);
	if ((s = dnnl_stream_create(&e->st, dp_engine, dnnl_stream_default_flags)) != dnnl_success) return s;
	struct { dnnl_memory_t *m; const dnnl_memory_desc_t *md; } ms[] = {
		{&e->src, &c->src}, {&e->dst, &c->dst}, {&e->wf, &c->fwd.wmd}, {&e->wd, &c->bwd_data.wmd},
		{&e->dw, &c->bwd_w.wmd}, {&e->hwio, &c->hwio}, {&e->sf, &c->fwd.smd}, {&e->sd, &c->bwd_data.smd},
		{&e->sw, &c->bwd_w.smd},
	};
	for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
		if ((s = dnnl_memory_create(ms[i].m, ms[i].md, dp_engine, DNNL_MEMORY_NONE)) != dnnl_success) return s;
	size_t sb = c->fwd.sbytes;
	if (c->bwd_data.sbytes > sb) sb = c->bwd_data.sbytes;
	if (c->bwd_w.sbytes > sb) sb = c->bwd_w.sbytes;
	e->scratch = dp_alloc(sb);
	e->dwbuf = dp_alloc(c->bwd_w.wbytes);
	if (!e->scratch || !e->dwbuf) return dnnl_out_of_memory;
	dnnl_memory_set_data_handle(e->sf, e->scratch);
	dnnl_memory_set_data_handle(e->sd, e->scratch);
	dnnl_memory_set_data_handle(e->sw, e->scratch);
	return dnnl_memory_set_data_handle(e->dw, e->dwbuf);
}

static void dp_prim_destroy(dp_prim *p) {
	if (p->reorder) dnnl_primitive_destroy(p->reorder);
	if (p->prim) dnnl_primitive_destroy(p->prim);
	if (p->pd) dnnl_primitive_desc_destroy(p->pd);
}

// dp_conv_destroy frees c and its primitives.
static void dp_conv_destroy(dp_conv *c) {
	dp_prim_destroy(&c->fwd);
	dp_prim_destroy(&c->bwd_data);
	dp_prim_destroy(&c->bwd_w);
	free(c);
}

// dp_exec_destroy frees e, its memory objects, stream and buffers.
static void dp_exec_destroy(dp_exec *e) {
	dnnl_memory_t ms[] = {e->src, e->dst, e->wf, e->wd, e->dw, e->hwio, e->sf, e->sd, e->sw};
	for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++)
		if (ms[i]) dnnl_memory_destroy(ms[i]);
	if (e->st) dnnl_stream_destroy(e->st);
	free(e->scratch);
	free(e->dwbuf);
	free(e);
}

static dnnl_status_t dp_run(dnnl_primitive_t p, dnnl_stream_t st, int n, const dnnl_exec_arg_t *args) {
	omp_set_num_threads(1);
	dnnl_status_t s = dnnl_primitive_execute(p, st, n, args);
	if (s != dnnl_success) return s;
	return dnnl_stream_wait(st);
}

// dp_weights reorders hwio weights w into the forward and backward-data primitives' formats,
// wf and wd (each of its primitive's wbytes; the same as w when no reorder is needed).
static dnnl_status_t dp_weights(dp_conv *c, dp_exec *e, float *w, void *wf, void *wd) {
	dnnl_status_t s = dnnl_success;
	dp_prim *ps[] = {&c->fwd, &c->bwd_data};
	void *dst[] = {wf, wd};
	dnnl_memory_t m[] = {e->wf, e->wd};
	dnnl_memory_set_data_handle(e->hwio, w);
	for (int i = 0; i < 2; i++) {
		if (!ps[i]->reorder) continue;
		dnnl_memory_set_data_handle(m[i], dst[i]);
		dnnl_exec_arg_t a[] = {{DNNL_ARG_FROM, e->hwio}, {DNNL_ARG_TO, m[i]}};
		if ((s = dp_run(ps[i]->reorder, e->st, 2, a)) != dnnl_success) break;
	}
	dnnl_memory_set_data_handle(e->hwio, DNNL_MEMORY_NONE);
	return s;
}

// dp_exec3 points memory objects m0, m1, m2 at p0, p1, p2 and runs prim on them as arguments
// a0, a1, a2, with scratchpad sm. The handles of m0 and m1 are cleared after the run: they may
// be Go memory, which C must not keep (m2's is cleared by the caller, which may read it).
static dnnl_status_t dp_exec3(dnnl_primitive_t prim, dp_exec *e, int a0, dnnl_memory_t m0, void *p0,
		int a1, dnnl_memory_t m1, void *p1, int a2, dnnl_memory_t m2, void *p2, dnnl_memory_t sm) {
	dnnl_memory_set_data_handle(m0, p0);
	dnnl_memory_set_data_handle(m1, p1);
	dnnl_memory_set_data_handle(m2, p2);
	dnnl_exec_arg_t a[] = {{a0, m0}, {a1, m1}, {a2, m2}, {DNNL_ARG_SCRATCHPAD, sm}};
	dnnl_status_t s = dp_run(prim, e->st, 4, a);
	dnnl_memory_set_data_handle(m0, DNNL_MEMORY_NONE);
	dnnl_memory_set_data_handle(m1, DNNL_MEMORY_NONE);
	return s;
}

static dnnl_status_t dp_fwd(dp_conv *c, dp_exec *e, float *x, void *w, float *y) {
	dnnl_status_t s = dp_exec3(c->fwd.prim, e, DNNL_ARG_SRC, e->src, x, DNNL_ARG_WEIGHTS, e->wf, w, DNNL_ARG_DST, e->dst, y, e->sf);
	dnnl_memory_set_data_handle(e->dst, DNNL_MEMORY_NONE);
	return s;
}

static dnnl_status_t dp_bwd_data(dp_conv *c, dp_exec *e, float *dy, void *w, float *dx) {
	dnnl_status_t s = dp_exec3(c->bwd_data.prim, e, DNNL_ARG_DIFF_DST, e->dst, dy, DNNL_ARG_WEIGHTS, e->wd, w, DNNL_ARG_DIFF_SRC, e->src, dx, e->sd);
	dnnl_memory_set_data_handle(e->src, DNNL_MEMORY_NONE);
	return s;
}

// dp_bwd_w writes the weight gradient of one image, in hwio, to dw.
static dnnl_status_t dp_bwd_w(dp_conv *c, dp_exec *e, float *x, float *dy, float *dw) {
	dnnl_status_t s = dp_exec3(c->bwd_w.prim, e, DNNL_ARG_SRC, e->src, x, DNNL_ARG_DIFF_DST, e->dst, dy,
		DNNL_ARG_DIFF_WEIGHTS, e->dw, c->bwd_w.reorder ? e->dwbuf : (void *)dw, e->sw);
	if (s != dnnl_success || !c->bwd_w.reorder) {
		dnnl_memory_set_data_handle(e->dw, e->dwbuf);
		return s;
	}
	dnnl_memory_set_data_handle(e->hwio, dw);
	dnnl_exec_arg_t r[] = {{DNNL_ARG_FROM, e->dw}, {DNNL_ARG_TO, e->hwio}};
	s = dp_run(c->bwd_w.reorder, e->st, 2, r);
	dnnl_memory_set_data_handle(e->hwio, DNNL_MEMORY_NONE);
	return s;
}
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

const dnnlBuilt = true

// DNNL names the oneDNN library this binary links ("oneDNN 2.6.3"), or "" when it was built
// without the dnnl tag.
func DNNL() string {
	v := C.dnnl_version()
	return fmt.Sprintf("oneDNN %d.%d.%d", v.major, v.minor, v.patch)
}

// dnnlError is a failed oneDNN call.
func dnnlError(what string, s C.dnnl_status_t) error {
	if s == C.dnnl_success {
		return nil
	}
	return fmt.Errorf("models: oneDNN %s failed with status %d", what, int(s))
}

// dnnlShape is a convolution's shape, the key of the primitive cache.
type dnnlShape struct{ ih, iw, ic, oh, ow, oc, k, s, pad int }

// dnnlConvs runs a direct executor's convolutions on oneDNN: one set of primitives per distinct
// shape (created once, reused by every layer of that shape and every call), each layer's weights
// in the primitives' formats (refreshed once per pass), and per worker one set of memory objects
// per shape. Every call is one image (minibatch 1) of a fixed shape on one thread (OpenMP set to
// one thread before every call), with operands at 64-byte-aligned addresses, so an example's
// result is a function of that example alone, whatever its slot, its neighbours, the batch and
// the worker count (docs/privacy.md, "Each example alone, bit for bit"). Only per-example
// quantities come from oneDNN: the clipped sum is still accumulated in float64 by the executor.
type dnnlConvs struct {
	prims               map[dnnlShape]*C.dp_conv
	layer               []*C.dp_conv       // by parameter layer; nil for others
	wf, wd              []unsafe.Pointer   // layer j's weights in the forward and backward-data formats (C memory)
	shapes              []*C.dp_conv       // distinct shapes, in creation order
	shapeI              map[*C.dp_conv]int // index of a shape in shapes
	own                 *dnnlWork          // the memory objects refresh uses
	maxIn, maxOut, maxW int                // the largest conv input, output and weight tensor
	mem                 *dnnlMem           // the C memory to free
}

// dnnlWork is one worker's oneDNN state: memory objects per shape, and 64-byte-aligned copies
// for operands that are not aligned.
type dnnlWork struct {
	exec        []*C.dp_exec // by shape index
	in, out, dw []float32
}

// newDnnlConvs creates the primitives for dr's conv layers.
func newDnnlConvs(dr *direct) (*dnnlConvs, error) {
	nl := len(dr.nw.plan.layers)
	dn := &dnnlConvs{prims: make(map[dnnlShape]*C.dp_conv), layer: make([]*C.dp_conv, nl),
		wf: make([]unsafe.Pointer, nl), wd: make([]unsafe.Pointer, nl), shapeI: make(map[*C.dp_conv]int),
		mem: &dnnlMem{}}
	// The C side is freed when dn is garbage: the cleanup holds dn.mem, which lists it, not dn.
	runtime.AddCleanup(dn, (*dnnlMem).free, dn.mem)
	for i := range dr.ops {
		o := &dr.ops[i]
		if o.kind != opConv || dn.layer[o.p] != nil {
			continue
		}
		g := o.conv
		key := dnnlShape{g.h, g.w, g.c, g.oh, g.ow, g.out, g.k, g.s, g.pad}
		c := dn.prims[key]
		if c == nil {
			c = (*C.dp_conv)(C.calloc(1, C.size_t(unsafe.Sizeof(C.dp_conv{}))))
			dn.shapes, dn.mem.convs = append(dn.shapes, c), append(dn.mem.convs, c) // freed with dn, also when creation fails
			if s := C.dp_conv_create(c, C.int(g.h), C.int(g.w), C.int(g.c), C.int(g.oh), C.int(g.ow), C.int(g.out),
				C.int(g.k), C.int(g.s), C.int(g.pad)); s != C.dnnl_success {
				return nil, dnnlError(fmt.Sprintf("convolution %dx%dx%d to %dx%dx%d (kernel %d, stride %d, padding %d)",
					g.h, g.w, g.c, g.oh, g.ow, g.out, g.k, g.s, g.pad), s)
			}
			dn.prims[key] = c
			dn.shapeI[c] = len(dn.shapes) - 1
		}
		dn.layer[o.p] = c
		dn.maxIn, dn.maxOut, dn.maxW = max(dn.maxIn, o.inSize()), max(dn.maxOut, o.outSize()), max(dn.maxW, g.d()*g.out)
		if c.fwd.reorder != nil {
			dn.wf[o.p] = C.dp_alloc(c.fwd.wbytes)
			dn.mem.bufs = append(dn.mem.bufs, dn.wf[o.p])
		}
		if c.bwd_data.reorder != nil {
			dn.wd[o.p] = C.dp_alloc(c.bwd_data.wbytes)
			dn.mem.bufs = append(dn.mem.bufs, dn.wd[o.p])
		}
	}
	own, err := dn.worker()
	if err != nil {
		return nil, err
	}
	dn.own = own
	return dn, nil
}

// dnnlMem lists the C memory of a dnnlConvs or a dnnlWork, to free when it is garbage.
type dnnlMem struct {
	convs []*C.dp_conv
	execs []*C.dp_exec
	bufs  []unsafe.Pointer
}

// free releases everything m lists.
func (m *dnnlMem) free() {
	for _, e := range m.execs {
		C.dp_exec_destroy(e)
	}
	for _, c := range m.convs {
		C.dp_conv_destroy(c)
	}
	for _, b := range m.bufs {
		C.free(b)
	}
}

// impl names the implementations oneDNN chose, one line per shape.
func (dn *dnnlConvs) impl() []string {
	var s []string
	for key, c := range dn.prims {
		s = append(s, fmt.Sprintf("%v: fwd %s, bwd-data %s, bwd-weights %s", key,
			C.GoString(c.fwd.impl), C.GoString(c.bwd_data.impl), C.GoString(c.bwd_w.impl)))
	}
	return s
}

// worker returns a new worker's state.
func (dn *dnnlConvs) worker() (*dnnlWork, error) {
	w := &dnnlWork{in: alignedF32(dn.maxIn), out: alignedF32(dn.maxOut), dw: alignedF32(dn.maxW)}
	mem := &dnnlMem{}
	runtime.AddCleanup(w, (*dnnlMem).free, mem)
	for _, c := range dn.shapes {
		e := (*C.dp_exec)(C.calloc(1, C.size_t(unsafe.Sizeof(C.dp_exec{}))))
		mem.execs = append(mem.execs, e)
		if s := C.dp_exec_create(e, c); s != C.dnnl_success {
			return nil, dnnlError("memory objects", s)
		}
		w.exec = append(w.exec, e)
	}
	return w, nil
}

// refresh lays out layer j's weights w (hwio: the direct executor's patch row order) for the
// forward and backward-data primitives.
func (dn *dnnlConvs) refresh(j int, w []float32) error {
	c := dn.layer[j]
	e := dn.own.exec[dn.shapeI[c]]
	return dnnlError("weight reorder", C.dp_weights(c, e, (*C.float)(unsafe.Pointer(&w[0])), dn.wf[j], dn.wd[j]))
}

// weights returns layer j's weights for primitive p: the reordered copy, or w itself.
func (dn *dnnlConvs) weights(reordered unsafe.Pointer, w []float32) unsafe.Pointer {
	if reordered != nil {
		return reordered
	}
	return unsafe.Pointer(&w[0])
}

// aligned64 reports whether s starts on a 64-byte boundary.
func aligned64(s []float32) bool { return uintptr(unsafe.Pointer(unsafe.SliceData(s)))%64 == 0 }

// operand returns s, or its copy in buf when s is not 64-byte aligned, so that every call sees
// its operands at the same alignment whatever the example's slot.
func operand(s, buf []float32) []float32 {
	if aligned64(s) {
		return s
	}
	buf = buf[:len(s)]
	copy(buf, s)
	return buf
}

func fp(s []float32) *C.float { return (*C.float)(unsafe.Pointer(unsafe.SliceData(s))) }

// call runs one primitive of conv layer j on worker wk's memory objects: f gets operands a and
// b (b may be nil) and the output out, each from its 64-byte-aligned scratch copy (abuf, bbuf,
// obuf) where it is not aligned itself.
func (dn *dnnlConvs) call(what string, j int, wk *dnnlWork, a, abuf, b, bbuf, out, obuf []float32,
	f func(c *C.dp_conv, e *C.dp_exec, a, b, out *C.float) C.dnnl_status_t) error {
	c := dn.layer[j]
	e := wk.exec[dn.shapeI[c]]
	a = operand(a, abuf)
	if b != nil {
		b = operand(b, bbuf)
	}
	dst := out
	if !aligned64(out) {
		dst = obuf[:len(out)]
	}
	if s := f(c, e, fp(a), fp(b), fp(dst)); s != C.dnnl_success {
		return dnnlError(what, s)
	}
	if &dst[0] != &out[0] {
		copy(out, dst)
	}
	return nil
}

// forward writes conv layer j's output for one image x (NHWC) to y, without bias; w is the
// layer's hwio weights.
func (dn *dnnlConvs) forward(j int, wk *dnnlWork, w, x, y []float32) error {
	wp := dn.weights(dn.wf[j], w)
	return dn.call("convolution forward", j, wk, x, wk.in, nil, nil, y, wk.out,
		func(c *C.dp_conv, e *C.dp_exec, x, _, y *C.float) C.dnnl_status_t { return C.dp_fwd(c, e, x, wp, y) })
}

// backwardData writes the gradient with respect to one image's input to dx, from dy, the
// gradient at its output.
func (dn *dnnlConvs) backwardData(j int, wk *dnnlWork, w, dy, dx []float32) error {
	wp := dn.weights(dn.wd[j], w)
	return dn.call("convolution backward data", j, wk, dy, wk.out, nil, nil, dx, wk.in,
		func(c *C.dp_conv, e *C.dp_exec, dy, _, dx *C.float) C.dnnl_status_t {
			return C.dp_bwd_data(c, e, dy, wp, dx)
		})
}

// backwardWeights writes one image's weight gradient, hwio, to dw, from its input x and output
// gradient dy.
func (dn *dnnlConvs) backwardWeights(j int, wk *dnnlWork, x, dy, dw []float32) error {
	return dn.call("convolution backward weights", j, wk, x, wk.in, dy, wk.out, dw, wk.dw,
		func(c *C.dp_conv, e *C.dp_exec, x, dy, dw *C.float) C.dnnl_status_t {
			return C.dp_bwd_w(c, e, x, dy, dw)
		})
}
