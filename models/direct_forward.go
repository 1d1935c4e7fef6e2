package models

import (
	"math"

	"github.com/chewxy/math32"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/kernels"
	"github.com/dptrain/dptrain/models/internal/core"
)

// The direct executor's forward pass: loading a block's inputs, running the ops in forward
// order, and the loss head (the loss, accuracy and predictions, and the gradient at the logits).

// in returns op i's input buffer (whole chunk).
func (dr *direct) in(i int) []float32 {
	if src := dr.ops[i].src; src >= 0 {
		return dr.out[src]
	}
	return dr.x
}

// load copies samples [start+lo, start+lo+m) of b into the chunk input in NHWC.
func (dr *direct) load(b data.Batch, start, lo, m int) {
	nw := dr.nw
	d := nw.inDim
	src := b.X[(start+lo)*d : (start+lo+m)*d]
	dst := dr.x[lo*d : (lo+m)*d]
	if in := nw.res.input; len(in) == 3 && in[0] > 1 {
		for s := 0; s < m; s++ {
			core.Transpose(src[s*d:(s+1)*d], dst[s*d:(s+1)*d], in[0], in[1]*in[2])
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
				kernels.ReLU(x, y) // NaN stays NaN (Go's max), as actOp
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
			kernels.Add2(y, x, dr.out[o.src2][lo*os:(lo+m)*os])
		case opFlatten:
			// NHWC to the graph's (channel, row, column) order, which the dense weights index.
			for k := 0; k < m; k++ {
				core.Transpose(x[k*is:(k+1)*is], y[k*os:(k+1)*os], o.ih*o.iw, o.ic)
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
func (dr *direct) loss(b data.Batch, start, lo, m int, grad bool, st *data.Stats, pred []int32) {
	c := dr.nw.res.classes
	logits := dr.out[len(dr.ops)-1]
	for k := lo; k < lo+m; k++ {
		row := logits[k*c : (k+1)*c]
		y := -1
		if b.Y != nil {
			y = int(b.Y[start+k])
		}
		best := core.ScoreRow(row, y, st)
		if pred != nil {
			pred[start+k] = int32(best)
		}
		if !grad {
			continue
		}
		lse := core.LogSumExp(row)
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
