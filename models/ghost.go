package models

import (
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
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

// useGram reports whether the Gram identity is cheaper than materialising P_iᵀG_i.
func (l *pLayer) useGram() bool {
	r := l.rows()
	return r*(l.d+l.k) < 2*l.d*l.k
}

func sumSq(s []float32) float64 {
	var v float64
	for _, x := range s {
		v += float64(x) * float64(x)
	}
	return v
}

func general(rows, cols int, data []float32) blas32.General {
	return blas32.General{Rows: rows, Cols: cols, Stride: cols, Data: data[:rows*cols]}
}

// ghostSquaredNorms adds ‖∇ℓ_i‖² of the first m rows of t's last run into sq.
func (nw *Network) ghostSquaredNorms(t *tape, m int, sq []float64) {
	for j := range nw.plan.layers {
		l := &nw.plan.layers[j]
		switch l.kind {
		case kindDense:
			a, g := t.a[j], t.gz[j]
			for i := 0; i < m; i++ {
				gg := sumSq(g[i*l.k : (i+1)*l.k])
				sq[i] += sumSq(a[i*l.d:(i+1)*l.d]) * gg
				if l.b >= 0 {
					sq[i] += gg
				}
			}
		case kindConv:
			r := l.rows()
			if l.useGram() {
				nw.scratch = grow(nw.scratch, 2*r*r)
				pp := blas32.Symmetric{Uplo: blas.Upper, N: r, Stride: r, Data: nw.scratch[:r*r]}
				gg := blas32.Symmetric{Uplo: blas.Upper, N: r, Stride: r, Data: nw.scratch[r*r : 2*r*r]}
				for i := 0; i < m; i++ {
					blas32.Syrk(blas.NoTrans, 1, general(r, l.d, t.a[j][i*r*l.d:]), 0, pp)
					blas32.Syrk(blas.NoTrans, 1, general(r, l.k, t.gz[j][i*r*l.k:]), 0, gg)
					var v float64
					for p := 0; p < r; p++ {
						v += float64(pp.Data[p*r+p]) * float64(gg.Data[p*r+p])
						var off float64
						for q := p + 1; q < r; q++ {
							off += float64(pp.Data[p*r+q]) * float64(gg.Data[p*r+q])
						}
						v += 2 * off
					}
					sq[i] += v
				}
			} else {
				nw.scratch = grow(nw.scratch, l.d*l.k)
				w := general(l.d, l.k, nw.scratch)
				for i := 0; i < m; i++ {
					blas32.Gemm(blas.Trans, blas.NoTrans, 1, general(r, l.d, t.a[j][i*r*l.d:]),
						general(r, l.k, t.gz[j][i*r*l.k:]), 0, w)
					sq[i] += sumSq(w.Data)
				}
			}
			if l.b >= 0 {
				nw.scratch = grow(nw.scratch, l.k)
				for i := 0; i < m; i++ {
					s := nw.scratch[:l.k]
					columnSums(s, t.gz[j][i*r*l.k:(i+1)*r*l.k], l.k)
					sq[i] += sumSq(s)
				}
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
}

func sum(s []float32) float64 {
	var v float64
	for _, x := range s {
		v += float64(x)
	}
	return v
}

// columnSums writes the column sums of the row-major matrix g with k columns into s.
func columnSums(s, g []float32, k int) {
	clear(s)
	for r := 0; r < len(g); r += k {
		for c, v := range g[r : r+k] {
			s[c] += v
		}
	}
}

// ghostScaledSum adds Σ_{i<m} scale_i ∇ℓ_i into grad. It scales t's G buffers in place.
func (nw *Network) ghostScaledSum(t *tape, m int, scale []float32, grad []float32) {
	unit := true
	for _, c := range scale {
		if c != 1 {
			unit = false
			break
		}
	}
	for j := range nw.plan.layers {
		l := &nw.plan.layers[j]
		switch l.kind {
		case kindDense, kindConv:
			r := l.rows()
			g := t.gz[j][:m*r*l.k]
			if !unit {
				for i := 0; i < m; i++ {
					blas32.Scal(scale[i], blas32.Vector{N: r * l.k, Inc: 1, Data: g[i*r*l.k:]})
				}
			}
			blas32.Gemm(blas.Trans, blas.NoTrans, 1, general(m*r, l.d, t.a[j]), general(m*r, l.k, g),
				1, general(l.d, l.k, grad[l.w:]))
			if l.b >= 0 {
				nw.scratch = grow(nw.scratch, l.k)
				s := nw.scratch[:l.k]
				columnSums(s, g, l.k)
				for c, v := range s {
					grad[l.b+c] += v
				}
			}
		case kindGN:
			for i := 0; i < m; i++ {
				for c := 0; c < l.c; c++ {
					o := (i*l.c + c) * l.hw
					grad[l.w+c] += float32(float64(scale[i]) * sum(t.gz[j][o:o+l.hw]))
					grad[l.b+c] += float32(float64(scale[i]) * sum(t.g2[j][o:o+l.hw]))
				}
			}
		}
	}
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
			blas32.Gemm(blas.Trans, blas.NoTrans, 1, general(r, l.d, t.a[j][i*r*l.d:]), general(r, l.k, gz),
				0, general(l.d, l.k, g[l.w:]))
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
