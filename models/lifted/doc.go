// Package lifted is the lifted ReLU network of DP-MBCD (Chen & Liu, "Hidden State Differential Private Mini-Batch Block Coordinate Descent",
// Appendix B.2.2, with the paper's typos corrected where noted): the penalty form of Eq. (4)
// with γ = 1,
//
//	F(W, x, u) = ½‖W_D x_D − y‖² + ½ Σ_{d=0}^{D−1} ( ‖x_{d+1} − relu(u_d)‖² + ‖u_d − W_d x_d‖² ),
//
// whose weight blocks W_0..W_D are released and whose auxiliaries u_d (pre-activations) and
// x_d (post-activations, d ≥ 1) are hidden and kept per training example. F is convex in each
// block with the others fixed (multi-convex), so every hidden block is minimised exactly:
//
//   - the x-update (Eq. 11, with the loose last-layer "Prox_{1/γ,R}" made the MSE ridge
//     solution): x_0 is the input
//     and is never updated; for d = 1..D, x_d = (W_dᵀW_d + I)⁻¹(W_dᵀ t_d + relu(u_{d−1})) with
//     t_d = u_d below the top and t_D = y (the MSE head in closed form), by Cholesky of the
//     n_d×n_d SPD matrix;
//   - the activation-norm clip (Eq. 12): x_d ← x_d·min(1, ρ_d/‖x_d‖), per example, the input
//     x_0 included, which bounds the smoothness of block W_d by ρ_d² (Lemma B.1);
//   - the u-update (Eq. 10): Zeng et al.'s closed-form ReLU prox, elementwise.
//
// The released blocks are not updated here: Blocks returns, per block, the batch's clipped
// inputs X_d and targets t_d, and BlockGradient gives the per-example gradients
// x_{d,i}(W_d x_{d,i} − t_{d,i})ᵀ of ½‖t_d − W_d x_d‖², each clipped to C with the shared
// ghost-clipping kernels (SquaredNorms and ScaledSum of package internal/kernels, which
// also holds BlockGradient and ProximalSolve so that package optim calls them without
// importing this one), for the private step of package optim (Eq. 14).
//
// Layout: weights are row-major In×Out matrices (W_dᵀ in the paper's notation), as
// models.Network stores a dense layer without bias, and examples are rows. So a network built
// by models.New with kind mlp, activation relu and no_bias shares its parameter vector with
// the lifted form: the trainer evaluates the released weights with the ordinary forward pass.
//
// Storage: the auxiliaries of example i (u_0..u_{D−1}, x_1..x_D) are float32 and keyed by its
// dataset index (models.Batch.Index); they are initialised by a forward pass the first time the
// example is visited. With Recompute they are never stored and re-derived by a forward pass at
// every visit (memory n·2Σ_{d≥1} n_d floats saved, a different algorithm in the hidden blocks,
// the same privacy accounting: hidden blocks are never released).
package lifted
