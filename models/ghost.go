package models

import (
	"github.com/dptrain/dptrain/layer"
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
//     read as the gradients of the broadcast inputs S and B on the graph engine (models/graph).
//
// The total squared norm of sample i is the sum over layers; c_i = min(1, C/‖∇ℓ_i‖).

// geometry is the layer's layer.Geometry for the exported kernels (dense and conv layers).
func (l *pLayer) geometry() layer.Geometry {
	return layer.Geometry{Rows: l.rows(), In: l.d, Out: l.k, Bias: l.b >= 0}
}

func general(rows, cols int, data []float32) blas32.General {
	return blas32.General{Rows: rows, Cols: cols, Stride: cols, Data: data[:rows*cols]}
}
