package graph

import (
	"fmt"
	"hash"

	"github.com/chewxy/hm"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// patchOp is im2col: it maps x (N, C, H, W) to the conv layer's patch matrix A
// (N·OH·OW, C·KH·KW), one row per (sample, output position) and columns ordered (channel,
// kernel row, kernel column), zeros where the window overhangs the padding: the GEMM's left
// operand, and the A of ghost clipping (ghost.go). It is gorgonia's Im2Col (same layout, checked
// in im2col_test.go) without dilation, with each kernel row copied as one contiguous run of the
// input row and the samples split across goroutines; its gradient is col2im (patchDiffOp),
// which adds every patch entry back to the input element it came from.
type patchOp struct {
	k, s, pad int // square kernel, stride, zero padding
	out       *outBuf
}

func (op patchOp) outHW(h, w int) (int, int) {
	return (h+2*op.pad-op.k)/op.s + 1, (w+2*op.pad-op.k)/op.s + 1
}

func (op patchOp) Arity() int { return 1 }
func (op patchOp) Type() hm.Type {
	return hm.NewFnType(G.TensorType{Dims: 4, Of: hm.TypeVariable('a')}, G.TensorType{Dims: 2, Of: hm.TypeVariable('a')})
}
func (op patchOp) InferShape(in ...G.DimSizer) (tensor.Shape, error) {
	s, ok := in[0].(tensor.Shape)
	if !ok || len(s) != 4 {
		return nil, fmt.Errorf("models: %s needs a 4-D input, got %v", op, in[0])
	}
	oh, ow := op.outHW(s[2], s[3])
	return tensor.Shape{s[0] * oh * ow, s[1] * op.k * op.k}, nil
}
func (op patchOp) Do(in ...G.Value) (G.Value, error) {
	x, err := float32s(in[0])
	if err != nil {
		return nil, err
	}
	s := shapeOf(in[0])
	oh, ow := op.outHW(s[2], s[3])
	d := s[1] * op.k * op.k
	// The buffer is kept across runs and may hold anything: the entries over the padding are
	// zeroed as the walk passes them, not by clearing the whole matrix first.
	a := op.out.get(s[0]*oh*ow*d, false)
	op.forEach(s, func(xs []float32, as []float32, src, dst, n int) {
		for i, v := range xs[src : src+n] { // runs are kernel rows: too short for memmove's call
			as[dst+i] = v
		}
	}, func(as []float32, dst, n int) {
		for i := range as[dst : dst+n] {
			as[dst+i] = 0
		}
	}, x, a)
	return tensor.New(tensor.WithBacking(a), tensor.WithShape(s[0]*oh*ow, d)), nil
}

// forEach walks every contiguous run shared by an input row and a patch row, sample by sample
// on up to GOMAXPROCS goroutines, and calls f(x of the sample, A rows of the sample, start in
// x, start in A, length). If pad is not nil it is called on every run of A entries over the
// padding, pad(A rows of the sample, start in A, length); otherwise they are not visited.
// Each sample is handled by one goroutine, so the result does not depend on the split.
func (op patchOp) forEach(s tensor.Shape, f func(xs, as []float32, src, dst, n int), pad func(as []float32, dst, n int), x, a []float32) {
	c, h, w := s[1], s[2], s[3]
	oh, ow := op.outHW(h, w)
	d := c * op.k * op.k
	forPlanes(s[0], oh*ow*d, 0, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			xs, as := x[b*c*h*w:(b+1)*c*h*w], a[b*oh*ow*d:(b+1)*oh*ow*d]
			for i := 0; i < oh; i++ {
				for j := 0; j < ow; j++ {
					row := (i*ow + j) * d
					c0 := j*op.s - op.pad // input column of the kernel's first column
					lo, hi := max(0, -c0), min(op.k, w-c0)
					if lo >= hi {
						if pad != nil {
							pad(as, row, d)
						}
						continue
					}
					for ch := 0; ch < c; ch++ {
						for kr := 0; kr < op.k; kr++ {
							r := i*op.s - op.pad + kr
							o := row + (ch*op.k+kr)*op.k
							if r < 0 || r >= h {
								if pad != nil {
									pad(as, o, op.k)
								}
								continue
							}
							if pad != nil && lo > 0 {
								pad(as, o, lo)
							}
							if pad != nil && hi < op.k {
								pad(as, o+hi, op.k-hi)
							}
							f(xs, as, ch*h*w+r*w+c0+lo, o+lo, hi-lo)
						}
					}
				}
			}
		}
	})
}

func (op patchOp) ReturnsPtr() bool      { return false }
func (op patchOp) CallsExtern() bool     { return false }
func (op patchOp) OverwritesInput() int  { return -1 }
func (op patchOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op patchOp) Hashcode() uint32      { return fnvHash(op.String()) }
func (op patchOp) String() string        { return fmt.Sprintf("im2col%d/%d/%d", op.k, op.s, op.pad) }
func (op patchOp) DiffWRT(int) []bool    { return []bool{true} }
func (op patchOp) SymDiff(in G.Nodes, out, grad *G.Node) (G.Nodes, error) {
	d := patchDiffOp{patchOp: op, shape: in[0].Shape().Clone()}
	d.out = newOutBuf() // not the forward op's
	dx, err := G.ApplyOp(d, grad)
	return G.Nodes{dx}, err
}

// patchDiffOp is col2im: ∂L/∂x from ∂L/∂A, each input element receiving the sum of the
// entries of A that copied it.
type patchDiffOp struct {
	patchOp
	shape tensor.Shape // x's
}

func (op patchDiffOp) Arity() int { return 1 }
func (op patchDiffOp) Type() hm.Type {
	return hm.NewFnType(G.TensorType{Dims: 2, Of: hm.TypeVariable('a')}, G.TensorType{Dims: 4, Of: hm.TypeVariable('a')})
}
func (op patchDiffOp) InferShape(...G.DimSizer) (tensor.Shape, error) { return op.shape.Clone(), nil }
func (op patchDiffOp) Do(in ...G.Value) (G.Value, error) {
	ga, err := float32s(in[0])
	if err != nil {
		return nil, err
	}
	gx := op.out.get(op.shape.TotalSize(), true)
	op.forEach(op.shape, func(xs, as []float32, src, dst, n int) {
		for i, v := range as[dst : dst+n] {
			xs[src+i] += v
		}
	}, nil, gx, ga)
	return tensor.New(tensor.WithBacking(gx), tensor.WithShape(op.shape.Clone()...)), nil
}
func (op patchDiffOp) WriteHash(h hash.Hash) { fmt.Fprint(h, op.String()) }
func (op patchDiffOp) Hashcode() uint32      { return fnvHash(op.String()) }
func (op patchDiffOp) String() string {
	return fmt.Sprintf("col2im%d/%d/%d%v", op.k, op.s, op.pad, op.shape)
}
func (op patchDiffOp) DiffWRT(int) []bool { return []bool{false} }
func (op patchDiffOp) SymDiff(G.Nodes, *G.Node, *G.Node) (G.Nodes, error) {
	return nil, fmt.Errorf("models: %s has no derivative (second derivatives are not needed)", op)
}
