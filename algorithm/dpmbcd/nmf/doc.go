// Package nmf is DP-MBCD's first case study, mini-batch non-negative matrix factorisation
// (Chen & Liu, "Hidden State Differential Private Mini-Batch Block Coordinate Descent",
// Eq. 2 and Algorithm 3 of Appendix B.2.1, with the nonnegativity projection the algorithm omits
// and Y updated per mini-batch as in Section 3.2):
//
//	min_{X ≥ 0, Y ≥ 0} ½‖X Y − M‖_F²,   M ∈ R^{n×c} (one row per example), X ∈ R^{n×r}, Y ∈ R^{r×c}.
//
// Each example owns one row m_i of M and the matching row x_i of X. X is hidden (in the
// horizontal-federated reading each node keeps its own rows; no row is ever released) and Y is
// the only released block, updated on every mini-batch B of a shuffle-once partition:
//
//  1. hidden X rows (Algorithm 1's φ-update, no noise): InnerSteps projected gradient steps
//     x_i ← Π(x_i − η_X·(x_i Y − m_i)Yᵀ), with the Hessian-normalised step
//     η_X = min(η, κ/‖YYᵀ‖_F) (‖YYᵀ‖_F ≥ ‖YYᵀ‖_2, the row sub-problem's Hessian) and Π the
//     projection onto {x ≥ 0, ‖x‖ ≤ ρ} (max(·, 0), then scale into the ball: exact for the
//     intersection of the orthant with a centred ball);
//  2. released Y (Eq. 6 with per-example clipping, so that S_g bounds the sensitivity):
//     Y ← max(0, Y − (η_eff/b)·(Σ_{i∈B} clip_C(x_iᵀ(x_i Y − m_i)) + N(0, σ²C²·I))),
//     each example's gradient clipped with the shared kernels (lifted.BlockGradient, i.e.
//     kernels.SquaredNorms, kernels.ScaledSum, kernels.ClipScale).
//
// The step size: the paper's Hessian clipping is taken in the form of its proof of Lemma 4.1
// (Appendix C.1),
// η_eff = min(η, κ/‖H‖) with H = X_BᵀX_B/b the Y sub-problem's Hessian. Taken from the batch,
// ‖H‖ is a function of the private rows, and the released Y's noise scale η_eff·σC/b would
// reveal it, which no accountant here covers. So ‖H‖ is replaced by its public bound: every
// hidden row is kept in the ρ-ball, hence ‖X_BᵀX_B‖_2/b ≤ max_i ‖x_i‖² ≤ ρ² = β, and
// η_eff = min(η, κ/ρ²) is the same at every step. β = ρ² is the smoothness the accountants are
// told (Run.Smoothness); the paper's mbcd mode then takes L_F = |1 − η_eff·β| (= |1 − κ| when
// κ/ρ² ≤ η, Lemma 4.1), the certified mode L_F = 1 (the block is only convex).
//
// Records: one Gaussian record per released Y step (Block 0, BatchIndex j, StepSize η_eff,
// Sensitivity C, NoiseStd σC, replace-one, shuffled-once), the convention of package mbcd
// (o = η·σ²C²/(2b²), S_g = 2C). Declare returns the record a Step with the same arguments
// returns, without touching the data.
//
// Hidden rows are carried across visits by default, so a Y step depends on earlier (hidden)
// iterates through them: the paper's modelling (its mbcd bound treats the other blocks as
// fixed, although the hidden state persists across steps). Recompute restarts them from their public initial values at
// every visit, which is what mbcd-certified requires.
//
// Joint selects the DP-SGD baseline on the same objective: one gradient step of X_B and of Y
// from the same point (Y's gradient clipped and noised exactly as above), instead of the
// alternating block updates.
package nmf
