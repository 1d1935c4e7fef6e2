package graph

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/dptrain/dptrain/internal/kernels"
	"github.com/dptrain/dptrain/models/internal/core"
)

// The graph engine's ghost clipping: per-sample norms, clipped sums and per-sample gradients
// from the A and G a ghost-mode tape read (the identities are in models/ghost.go).

// wsSampleGrad writes sample i's gradient with respect to standardised conv layer j's raw
// weights into w (d×k): P_iᵀG_i, the gradient with respect to Ŵ, mapped back through the
// standardisation (core.StandardiseBack). e.ws must be refreshed.
func (e *engine) wsSampleGrad(t *tape, j, i int, w []float32) {
	l := &e.net.Layers[j]
	r := l.Rows()
	blas32.Gemm(blas.Trans, blas.NoTrans, 1, general(r, l.D, t.a[j][i*r*l.D:]), general(r, l.K, t.gz[j][i*r*l.K:]),
		0, general(l.D, l.K, w))
	e.ws.acc = core.StandardiseBack(w, e.ws.hat[j], e.ws.inv[j], l.D, l.K, e.ws.acc)
}

// ghostSquaredNorms adds ‖∇ℓ_i‖² of the first m rows of t's last run into sq.
func (e *engine) ghostSquaredNorms(t *tape, m int, sq []float64) error {
	for j := range e.net.Layers {
		l := &e.net.Layers[j]
		switch {
		case l.WS:
			// Materialised and mapped back: the norm of the raw weights' gradient.
			e.scratch = kernels.Grow(e.scratch, l.D*l.K+l.K)
			w, cs := e.scratch[:l.D*l.K], e.scratch[l.D*l.K:l.D*l.K+l.K]
			r := l.Rows()
			for i := 0; i < m; i++ {
				e.wsSampleGrad(t, j, i, w)
				sq[i] += kernels.SumSquares(w)
				if l.B >= 0 {
					kernels.ColumnSums(cs, t.gz[j][i*r*l.K:(i+1)*r*l.K], l.K)
					sq[i] += kernels.SumSquares(cs)
				}
			}
			continue
		}
		switch l.Kind {
		case core.KindDense, core.KindConv:
			var err error
			if e.scratch, e.norm64, err = kernels.SquaredNormsBuf(sq[:m], t.a[j], t.gz[j], l.Geometry(), e.scratch, e.norm64); err != nil {
				return fmt.Errorf("layer %s: %w", l.Name, err)
			}
		case core.KindGN:
			for i := 0; i < m; i++ {
				for c := 0; c < l.C; c++ {
					o := (i*l.C + c) * l.HW
					s, b := sum(t.gz[j][o:o+l.HW]), sum(t.g2[j][o:o+l.HW])
					sq[i] += s*s + b*b
				}
			}
		}
	}
	return nil
}

func sum(s []float32) float64 {
	var v float64
	for _, x := range s {
		v += float64(x)
	}
	return v
}

// ghostScaledSum adds Σ_{i<m} scale_i ∇ℓ_i into grad. It scales t's G buffers in place.
func (e *engine) ghostScaledSum(t *tape, m int, scale []float32, grad []float32) error {
	for j := range e.net.Layers {
		l := &e.net.Layers[j]
		if l.WS {
			// The same mapped-back per-sample gradients whose norms gave scale, each scaled
			// and added in float32 like the materialising path.
			e.scratch = kernels.Grow(e.scratch, l.D*l.K+l.K)
			w, cs := e.scratch[:l.D*l.K], e.scratch[l.D*l.K:l.D*l.K+l.K]
			gw := grad[l.W : l.W+l.D*l.K]
			r := l.Rows()
			for i := 0; i < m; i++ {
				c := scale[i]
				if c == 0 {
					continue // clipped to zero: its gradient may hold NaN
				}
				e.wsSampleGrad(t, j, i, w)
				for q, v := range w {
					gw[q] += c * v
				}
				if l.B >= 0 {
					kernels.ColumnSums(cs, t.gz[j][i*r*l.K:(i+1)*r*l.K], l.K)
					for q, v := range cs {
						grad[l.B+q] += c * v
					}
				}
			}
			continue
		}
		switch l.Kind {
		case core.KindDense, core.KindConv:
			var gb []float32
			if l.B >= 0 {
				gb = grad[l.B : l.B+l.K]
			}
			var err error
			if e.scratch, e.norm64, err = kernels.ScaledSumBuf(grad[l.W:l.W+l.D*l.K], gb, t.a[j], t.gz[j], scale[:m], l.Geometry(), e.scratch, e.norm64); err != nil {
				return fmt.Errorf("layer %s: %w", l.Name, err)
			}
		case core.KindGN:
			for i := 0; i < m; i++ {
				if scale[i] == 0 {
					continue // clipped to zero: its sums may be NaN
				}
				for c := 0; c < l.C; c++ {
					o := (i*l.C + c) * l.HW
					grad[l.W+c] += float32(float64(scale[i]) * sum(t.gz[j][o:o+l.HW]))
					grad[l.B+c] += float32(float64(scale[i]) * sum(t.g2[j][o:o+l.HW]))
				}
			}
		}
	}
	return nil
}

// sampleGrad writes ∇ℓ_i, row i of t's last run, into g (len(Params())).
func (e *engine) sampleGrad(t *tape, i int, g []float32) {
	for j := range e.net.Layers {
		l := &e.net.Layers[j]
		switch l.Kind {
		case core.KindDense:
			a, gz := t.a[j][i*l.D:(i+1)*l.D], t.gz[j][i*l.K:(i+1)*l.K]
			for r, av := range a {
				row := g[l.W+r*l.K : l.W+(r+1)*l.K]
				for c, gv := range gz {
					row[c] = av * gv
				}
			}
			if l.B >= 0 {
				copy(g[l.B:l.B+l.K], gz)
			}
		case core.KindConv:
			r := l.Rows()
			gz := t.gz[j][i*r*l.K : (i+1)*r*l.K]
			if l.WS {
				e.wsSampleGrad(t, j, i, g[l.W:l.W+l.D*l.K])
			} else {
				blas32.Gemm(blas.Trans, blas.NoTrans, 1, general(r, l.D, t.a[j][i*r*l.D:]), general(r, l.K, gz),
					0, general(l.D, l.K, g[l.W:]))
			}
			if l.B >= 0 {
				kernels.ColumnSums(g[l.B:l.B+l.K], gz, l.K)
			}
		case core.KindGN:
			for c := 0; c < l.C; c++ {
				o := (i*l.C + c) * l.HW
				g[l.W+c] = float32(sum(t.gz[j][o : o+l.HW]))
				g[l.B+c] = float32(sum(t.g2[j][o : o+l.HW]))
			}
		}
	}
}
