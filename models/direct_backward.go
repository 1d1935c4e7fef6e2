package models

import (
	"gonum.org/v1/gonum/blas"

	"github.com/dptrain/dptrain/internal/kernels"
	"github.com/dptrain/dptrain/models/internal/core"
)

// The direct executor's backward pass: the ops in reverse order, each writing or adding its
// input's gradient.

// standardiseBack maps v, a gradient with respect to conv layer j's Ŵ in patch row order, in
// place to the gradient with respect to its raw weights when the layer is standardised.
func (dr *direct) standardiseBack(j int, v []float32, s *directScratch) {
	if l := &dr.nw.plan.layers[j]; l.ws {
		s.wsAcc = core.StandardiseBack(v, dr.wp[j], dr.inv[j], l.d, l.k, s.wsAcc)
	}
}

// dy returns the gradient of the summed loss with respect to op i's output (whole chunk).
func (dr *direct) dy(i int) []float32 { return dr.dout[i] }

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
					kernels.Add(dx, dy)
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
						kernels.Add(dx[k*is:(k+1)*is], dxk)
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
				// Keep the gradient where x's sign bit is clear, as actDiffOp.
				kernels.ReLUGrad(x, dy[:len(x)], dx[:len(x)])
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
				core.Transpose(dy[k*os:(k+1)*os], dx[k*is:(k+1)*is], o.ic, o.ih*o.iw)
			}
		}
		if o.acc && writes {
			kernels.Add(dr.dout[o.src][lo*is:(lo+m)*is], s.accum[:m*is])
		}
	}
}
