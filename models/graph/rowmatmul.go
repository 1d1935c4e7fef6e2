package graph

import (
	"fmt"
	"hash"
	"sync"
	"unsafe"

	"github.com/chewxy/hm"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"

	"github.com/dptrain/dptrain/internal/kernels"
)

// The graph engine's dense and conv products, one example at a time.
//
// A layer's Z = A·W takes A with a block of r rows per example (r = 1 for a dense layer, the
// oh·ow patch rows for a conv layer) for all the examples of a chunk. One GEMM over the whole
// chunk does not compute an example's rows with arithmetic of its own: OpenBLAS's sgemm
// kernels (Haswell's, which it picks on this project's AMD EPYC machines) round a row of the
// product differently depending on the row's offset in the matrix (the micro-kernel's unroll
// of 12 rows in its column-major view takes different sub-paths, and the edge tiles others).
// Measured with graph_slot_test.go on the graph's former single G.Mul: the same example at
// slots 1, 2, 5, 6, 11, 12, 31, … (conv presets) or 6, 11, 12, 31, 32 (MLPs) of a chunk got a
// per-example gradient differing in most coordinates by up to 4·10⁻⁸ of its norm, and a norm
// and losses differing in the 8th digit, from the example alone; through a max-pooling
// near-tie one ulp can move a gradient by a fair fraction of the clip norm. What an example
// contributes to a private release (activations, gradients, norms, clip factors, trace
// values) then depends on its slot and its neighbours, not on the example alone.
//
// rowMatMulOp makes one BLAS call per example instead, of the same shape for every example and
// every chunk size (an r×d by d×k GEMM, or a gemv for r = 1), on operands at the same
// alignment (mulEach): its result depends on the example's rows and W alone. Its derivative
// with respect to A, G·Wᵀ, is the same op with W transposed. The derivative with respect to W,
// Aᵀ·G, is a sum over the chunk's examples that no per-example release reads (only modeRef
// computes it): one product, accumulated in float64 (weightGradOp).

// rowMatMulOp maps A ((n·rows)×d) and W (d×k) to Z = A·W ((n·rows)×k), or, with transW, G
// ((n·rows)×k) and W (d×k) to G·Wᵀ ((n·rows)×d), one fixed-shape BLAS call per block of rows
// rows, the examples split across goroutines.
type rowMatMulOp struct {
	rows   int  // rows per example
	transW bool // multiply by Wᵀ: the derivative with respect to A
	out    *outBuf
}

func (op rowMatMulOp) Arity() int { return 2 }
func (op rowMatMulOp) Type() hm.Type {
	t := G.TensorType{Dims: 2, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t, t)
}

// dims returns the row count, the inner and the output widths of a product of left operand
// shape a by W of shape w.
func (op rowMatMulOp) dims(a, w tensor.Shape) (n, inner, width int, err error) {
	if len(a) != 2 || len(w) != 2 {
		return 0, 0, 0, fmt.Errorf("models: %s needs 2-D operands, got %v and %v", op, a, w)
	}
	inner, width = w[0], w[1]
	if op.transW {
		inner, width = width, inner
	}
	if a[1] != inner || op.rows <= 0 || a[0]%op.rows != 0 {
		return 0, 0, 0, fmt.Errorf("models: %s cannot multiply %v by W %v", op, a, w)
	}
	return a[0], inner, width, nil
}

func (op rowMatMulOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	a, ok := in[0].(tensor.Shape)
	w, ok2 := in[1].(tensor.Shape)
	if !ok || !ok2 {
		return nil, fmt.Errorf("models: %s: bad input shapes %v, %v", op, in[0], in[1])
	}
	n, _, width, err := op.dims(a, w)
	if err != nil {
		return nil, err
	}
	return tensor.Shape{n, width}, nil
}

func (op rowMatMulOp) Do(in ...G.Value) (G.Value, error) {
	a, err := float32s(in[0])
	if err != nil {
		return nil, err
	}
	w, err := float32s(in[1])
	if err != nil {
		return nil, err
	}
	ws := shapeOf(in[1])
	n, inner, width, err := op.dims(shapeOf(in[0]), ws)
	if err != nil {
		return nil, err
	}
	if len(a) < n*inner || len(w) < ws[0]*ws[1] {
		return nil, fmt.Errorf("models: %s: %d and %d values for shapes %v and %v", op, len(a), len(w), shapeOf(in[0]), ws)
	}
	z := op.out.get(n*width, false)
	mulEach(a[:n*inner], general(ws[0], ws[1], w), op.transW, z, op.rows)
	return tensor.New(tensor.WithBacking(z), tensor.WithShape(n, width)), nil
}

// mulEach writes, for each block of r rows of a, that block times op(W) (W or Wᵀ) into the
// same rows of z: one BLAS call of the same shape per block, the blocks split across
// goroutines (each block is computed by one call, so the result does not depend on the split).
// Each call reads its block from, and writes its result to, scratch that starts on a 64-byte
// boundary, so that every call also sees the same alignment: gonum's pure-Go kernels (its
// float32 dot product trims leading elements until an operand is 16-byte aligned) sum in an
// order that depends on the operands' addresses, and a block's address in a depends on its
// slot (measured: the graph's per-example gradients differed at odd slots in the pure-Go
// build).
func mulEach(a []float32, w blas32.General, transW bool, z []float32, r int) {
	inner, width := w.Rows, w.Cols
	tw, tv := blas.NoTrans, blas.Trans // tv: zᵢ = aᵢ·op(W) as a column, op(W)ᵀ·aᵢ
	if transW {
		inner, width = width, inner
		tw, tv = blas.Trans, blas.NoTrans
	}
	n := len(a) / (r * inner)
	forPlanes(n, r*inner*width, 0, func(lo, hi int) {
		buf := getScratch(r*inner + r*width)
		defer scratchPool.Put(buf)
		as, zs := alignedScratch(*buf, r*inner, r*width)
		for i := lo; i < hi; i++ {
			copy(as, a[i*r*inner:(i+1)*r*inner])
			// With β = 0 BLAS need not read zs, but implementations differ on 0·NaN: the
			// scratch may hold an earlier call's NaN, which must not reach this one.
			clear(zs)
			if r == 1 {
				blas32.Gemv(tv, 1, w, blas32.Vector{N: inner, Inc: 1, Data: as},
					0, blas32.Vector{N: width, Inc: 1, Data: zs})
			} else {
				blas32.Gemm(blas.NoTrans, tw, 1, general(r, inner, as), w, 0, general(r, width, zs))
			}
			copy(z[i*r*width:(i+1)*r*width], zs)
		}
	})
}

// general is the row-major matrix rows×cols on data.
func general(rows, cols int, data []float32) blas32.General {
	return blas32.General{Rows: rows, Cols: cols, Stride: cols, Data: data[:rows*cols]}
}

// scratchPool holds float32 scratch for mulEach, one buffer per goroutine in use.
var scratchPool sync.Pool

// align is the boundary, in float32 elements (64 bytes), that alignedScratch starts its
// slices on: a cache line, and a multiple of every SIMD width the BLAS kernels use.
const align = 16

// getScratch returns a buffer of at least n+2·align elements from scratchPool.
func getScratch(n int) *[]float32 {
	buf, _ := scratchPool.Get().(*[]float32)
	if buf == nil || cap(*buf) < n+2*align {
		s := make([]float32, n+2*align)
		buf = &s
	}
	*buf = (*buf)[:cap(*buf)]
	return buf
}

// alignedScratch returns two disjoint slices of s of n1 and n2 elements, each starting on a
// 64-byte boundary (s holds at least n1+n2+2·align elements).
func alignedScratch(s []float32, n1, n2 int) ([]float32, []float32) {
	o1 := skew(s)
	first := s[o1 : o1+n1]
	rest := s[o1+n1:]
	o2 := skew(rest)
	return first, rest[o2 : o2+n2]
}

// skew is the number of elements of s before its first 64-byte boundary.
func skew(s []float32) int {
	return int((64 - uintptr(unsafe.Pointer(unsafe.SliceData(s)))%64) % 64 / 4)
}

func (op rowMatMulOp) ReturnsPtr() bool      { return false }
func (op rowMatMulOp) CallsExtern() bool     { return false }
func (op rowMatMulOp) OverwritesInput() int  { return -1 }
func (op rowMatMulOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op rowMatMulOp) Hashcode() uint32      { return fnvHash(op.String()) }
func (op rowMatMulOp) String() string {
	if op.transW {
		return fmt.Sprintf("rowMatMulWᵀ%d", op.rows)
	}
	return fmt.Sprintf("rowMatMul%d", op.rows)
}
func (op rowMatMulOp) DiffWRT(int) []bool {
	if op.transW {
		return []bool{false, false}
	}
	return []bool{true, true}
}

// SymDiff gives ∂L/∂A = G·Wᵀ one example at a time and ∂L/∂W = Aᵀ·G. Nodes nothing reads are
// not compiled (build), so ∂L/∂W costs nothing outside modeRef.
func (op rowMatMulOp) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	if op.transW {
		return nil, fmt.Errorf("models: %s has no derivative (second derivatives are not needed)", op)
	}
	da, err := G.ApplyOp(rowMatMulOp{rows: op.rows, transW: true, out: newOutBuf()}, grad, in[1])
	if err != nil {
		return nil, err
	}
	dw, err := G.ApplyOp(weightGradOp{out: newOutBuf(), f64: new(f64Buf)}, in[0], grad)
	if err != nil {
		return nil, err
	}
	return G.Nodes{da, dw}, nil
}

// f64Buf is float64 scratch kept from run to run, like outBuf.
type f64Buf struct{ data []float64 }

// weightGradOp maps A (m×d) and G (m×k) to Aᵀ·G (d×k), the gradient of the summed loss with
// respect to W: one GEMM over all rows, in float64 (the inputs converted exactly, the sum over
// examples rounded once).
type weightGradOp struct {
	out *outBuf
	f64 *f64Buf
}

func (op weightGradOp) Arity() int { return 2 }
func (op weightGradOp) Type() hm.Type {
	t := G.TensorType{Dims: 2, Of: hm.TypeVariable('a')}
	return hm.NewFnType(t, t, t)
}
func (op weightGradOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	a, ok := in[0].(tensor.Shape)
	g, ok2 := in[1].(tensor.Shape)
	if !ok || !ok2 || len(a) != 2 || len(g) != 2 || a[0] != g[0] {
		return nil, fmt.Errorf("models: %s: bad input shapes %v, %v", op, in[0], in[1])
	}
	return tensor.Shape{a[1], g[1]}, nil
}
func (op weightGradOp) Do(in ...G.Value) (G.Value, error) {
	a, err := float32s(in[0])
	if err != nil {
		return nil, err
	}
	g, err := float32s(in[1])
	if err != nil {
		return nil, err
	}
	as, gs := shapeOf(in[0]), shapeOf(in[1])
	m, d, k := as[0], as[1], gs[1]
	if len(a) < m*d || len(g) < m*k {
		return nil, fmt.Errorf("models: %s: %d and %d values for shapes %v and %v", op, len(a), len(g), as, gs)
	}
	op.f64.data = kernels.GrowF64(op.f64.data, m*d+m*k+d*k)
	a64, g64, w64 := op.f64.data[:m*d], op.f64.data[m*d:m*(d+k)], op.f64.data[m*(d+k):m*(d+k)+d*k]
	kernels.ToF64(a64, a[:m*d])
	kernels.ToF64(g64, g[:m*k])
	clear(w64) // β = 0, but an earlier run may have left a NaN (see mulEach)
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, blas64.General{Rows: m, Cols: d, Stride: d, Data: a64},
		blas64.General{Rows: m, Cols: k, Stride: k, Data: g64}, 0, blas64.General{Rows: d, Cols: k, Stride: k, Data: w64})
	dw := op.out.get(d*k, false)
	for i, v := range w64 {
		dw[i] = float32(v)
	}
	return tensor.New(tensor.WithBacking(dw), tensor.WithShape(d, k)), nil
}
func (op weightGradOp) ReturnsPtr() bool      { return false }
func (op weightGradOp) CallsExtern() bool     { return false }
func (op weightGradOp) OverwritesInput() int  { return -1 }
func (op weightGradOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op weightGradOp) Hashcode() uint32      { return fnvHash(op.String()) }
func (op weightGradOp) String() string        { return "AᵀG" }
func (op weightGradOp) DiffWRT(int) []bool    { return []bool{false, false} }
func (op weightGradOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("models: %s has no derivative (second derivatives are not needed)", op)
}
