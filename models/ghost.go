package models

import (
	"fmt"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/dptrain/dptrain/internal/kernels"
)

// Ghost clipping: per-sample gradient norms and clipped sums from the batched forward and
// backward pass, without materialising a gradient per sample (Goodfellow 2015; Li et al. 2022,
// "Large language models can be strong differentially private learners", §4).
//
// A parameter layer sees its input A and the gradient G = ∂(Σ_i ℓ_i)/∂Z of the summed loss with
// respect to its output Z. Since sample i's loss depends only on its own rows of A and Z:
//
//   - dense, Z = AW + 1bᵀ: ∇_W ℓ_i = a_i g_iᵀ, ∇_b ℓ_i = g_i, so
//     ‖∇ℓ_i‖² = ‖a_i‖²‖g_i‖² + ‖g_i‖², and Σ_i c_i ∇_W ℓ_i = Aᵀ diag(c) G (one GEMM);
//   - conv as im2col, Z_i = P_i W + 1bᵀ with patches P_i (HW×kd) and G_i (HW×k):
//     ∇_W ℓ_i = P_iᵀ G_i, whose squared norm is either Σ_{p,q} (P_iP_iᵀ)_{pq}(G_iG_iᵀ)_{pq} (the
//     Gram identity, cost HW²(kd+k)/2 with SYRK) or ‖P_iᵀG_i‖² materialised one sample at a time
//     (cost HW·kd·k), whichever is cheaper; ∇_b ℓ_i = G_iᵀ1; and Σ_i c_i ∇_W ℓ_i = Pᵀ diag(c) G;
//   - GroupNorm, y = x̂·γ + β per channel: ∇_γ ℓ_i = Σ_positions x̂ ⊙ g_i, ∇_β ℓ_i = Σ_positions g_i,
//     read as the gradients of the broadcast inputs S and B (see tape).
//
// The total squared norm of sample i is the sum over layers; c_i = min(1, C/‖∇ℓ_i‖).

// geometry is the layer's LayerGeometry for the exported kernels (dense and conv layers).
func (l *pLayer) geometry() LayerGeometry {
	return LayerGeometry{Rows: l.rows(), In: l.d, Out: l.k, Bias: l.b >= 0}
}

func general(rows, cols int, data []float32) blas32.General {
	return blas32.General{Rows: rows, Cols: cols, Stride: cols, Data: data[:rows*cols]}
}

// wsSampleGrad writes sample i's gradient with respect to standardised conv layer j's raw
// weights into w (d×k): P_iᵀG_i, the gradient with respect to Ŵ, mapped back through the
// standardisation (ws.go). nw.ws must be refreshed.
func (nw *Network) wsSampleGrad(t *tape, j, i int, w []float32) {
	l := &nw.plan.layers[j]
	r := l.rows()
	blas32.Gemm(blas.Trans, blas.NoTrans, 1, general(r, l.d, t.a[j][i*r*l.d:]), general(r, l.k, t.gz[j][i*r*l.k:]),
		0, general(l.d, l.k, w))
	nw.ws.acc = standardiseBack(w, nw.ws.hat[j], nw.ws.inv[j], l.d, l.k, nw.ws.acc)
}

// ghostSquaredNorms adds ‖∇ℓ_i‖² of the first m rows of t's last run into sq.
func (nw *Network) ghostSquaredNorms(t *tape, m int, sq []float64) error {
	for j := range nw.plan.layers {
		l := &nw.plan.layers[j]
		switch {
		case l.ws:
			// Materialised and mapped back: the norm of the raw weights' gradient.
			nw.scratch = kernels.Grow(nw.scratch, l.d*l.k+l.k)
			w, cs := nw.scratch[:l.d*l.k], nw.scratch[l.d*l.k:l.d*l.k+l.k]
			r := l.rows()
			for i := 0; i < m; i++ {
				nw.wsSampleGrad(t, j, i, w)
				sq[i] += sumSq(w)
				if l.b >= 0 {
					columnSums(cs, t.gz[j][i*r*l.k:(i+1)*r*l.k], l.k)
					sq[i] += sumSq(cs)
				}
			}
			continue
		}
		switch l.kind {
		case kindDense, kindConv:
			var err error
			if nw.scratch, nw.norm64, err = squaredNorms(sq[:m], t.a[j], t.gz[j], l.geometry(), nw.scratch, nw.norm64); err != nil {
				return fmt.Errorf("layer %s: %w", l.name, err)
			}
		case kindGN:
			for i := 0; i < m; i++ {
				for c := 0; c < l.c; c++ {
					o := (i*l.c + c) * l.hw
					s, b := sum(t.gz[j][o:o+l.hw]), sum(t.g2[j][o:o+l.hw])
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
func (nw *Network) ghostScaledSum(t *tape, m int, scale []float32, grad []float32) error {
	for j := range nw.plan.layers {
		l := &nw.plan.layers[j]
		if l.ws {
			// The same mapped-back per-sample gradients whose norms gave scale, each scaled
			// and added in float32 like the materialising path.
			nw.scratch = kernels.Grow(nw.scratch, l.d*l.k+l.k)
			w, cs := nw.scratch[:l.d*l.k], nw.scratch[l.d*l.k:l.d*l.k+l.k]
			gw := grad[l.w : l.w+l.d*l.k]
			r := l.rows()
			for i := 0; i < m; i++ {
				c := scale[i]
				if c == 0 {
					continue // clipped to zero: its gradient may hold NaN
				}
				nw.wsSampleGrad(t, j, i, w)
				for q, v := range w {
					gw[q] += c * v
				}
				if l.b >= 0 {
					columnSums(cs, t.gz[j][i*r*l.k:(i+1)*r*l.k], l.k)
					for q, v := range cs {
						grad[l.b+q] += c * v
					}
				}
			}
			continue
		}
		switch l.kind {
		case kindDense, kindConv:
			var gb []float32
			if l.b >= 0 {
				gb = grad[l.b : l.b+l.k]
			}
			var err error
			if nw.scratch, nw.norm64, err = scaledSum(grad[l.w:l.w+l.d*l.k], gb, t.a[j], t.gz[j], scale[:m], l.geometry(), nw.scratch, nw.norm64); err != nil {
				return fmt.Errorf("layer %s: %w", l.name, err)
			}
		case kindGN:
			for i := 0; i < m; i++ {
				if scale[i] == 0 {
					continue // clipped to zero: its sums may be NaN
				}
				for c := 0; c < l.c; c++ {
					o := (i*l.c + c) * l.hw
					grad[l.w+c] += float32(float64(scale[i]) * sum(t.gz[j][o:o+l.hw]))
					grad[l.b+c] += float32(float64(scale[i]) * sum(t.g2[j][o:o+l.hw]))
				}
			}
		}
	}
	return nil
}

// sampleGrad writes ∇ℓ_i, row i of t's last run, into g (len(Params())).
func (nw *Network) sampleGrad(t *tape, i int, g []float32) {
	for j := range nw.plan.layers {
		l := &nw.plan.layers[j]
		switch l.kind {
		case kindDense:
			a, gz := t.a[j][i*l.d:(i+1)*l.d], t.gz[j][i*l.k:(i+1)*l.k]
			for r, av := range a {
				row := g[l.w+r*l.k : l.w+(r+1)*l.k]
				for c, gv := range gz {
					row[c] = av * gv
				}
			}
			if l.b >= 0 {
				copy(g[l.b:l.b+l.k], gz)
			}
		case kindConv:
			r := l.rows()
			gz := t.gz[j][i*r*l.k : (i+1)*r*l.k]
			if l.ws {
				nw.wsSampleGrad(t, j, i, g[l.w:l.w+l.d*l.k])
			} else {
				blas32.Gemm(blas.Trans, blas.NoTrans, 1, general(r, l.d, t.a[j][i*r*l.d:]), general(r, l.k, gz),
					0, general(l.d, l.k, g[l.w:]))
			}
			if l.b >= 0 {
				columnSums(g[l.b:l.b+l.k], gz, l.k)
			}
		case kindGN:
			for c := 0; c < l.c; c++ {
				o := (i*l.c + c) * l.hw
				g[l.w+c] = float32(sum(t.gz[j][o : o+l.hw]))
				g[l.b+c] = float32(sum(t.g2[j][o : o+l.hw]))
			}
		}
	}
}
