// Package mbcd accounts for DP-MBCD (Chen & Liu, "Hidden State Differential Private Mini-Batch
// Block Coordinate Descent for Multi-convexity Optimization", Algorithm 1 and Eq. 6):
// released blocks updated by noisy proximal gradient steps
//
//	θ_i ← Prox_{η, r}(θ_i − η·∇f(θ_i) + N(0, 2η·o(k, j)·I))
//
// on mini-batches of a fixed partition, hidden auxiliary blocks never released, and only the
// last iterate published.
//
// The bound tracks, per released block, the inverse log-Sobolev constant of the iterate
// (Lemma C.3)
//
//	1/c_{t+1} = (L_F·L_T)²/c_t + 2η·L_T²·o_t,    1/c_0 = 0 (data-independent initialisation),
//
// and a ledger e[j0] of R_α/α conditional on the differing example sitting in batch j0
// (Corollary 4.5 applied step by step, which is equivalent to Theorem 4.6 and avoids the
// off-by-one of its Eq. 9):
//
//	j0 = j (the step's batch):  e[j0] += Δ_t = η·S_g²/(4b²·o_t)            (no contraction)
//	j0 ≠ j:                     e[j0] *= (1 + 2η·o_t/(L_F²·(1/c_t)))^(−1/L_T²)
//
// Blocks compose by adding their ledgers before the mixture (Section 4.2: "no inter-block privacy leakage"), and the RDP is
//
//	shuffle-once partition (j0 uniform):  1/(α−1)·log Σ_j w_j·exp((α−1)·α·E[j]),
//	epoch reshuffling:                    α·(worst position of i0 in every epoch),
//	fresh subsets or full batch:          α·Σ_t Δ_t (i0 may be in every batch),
//
// with w_j = b/n for each of the ⌊n/b⌋ batches and the dropped remainder (n − ⌊n/b⌋b)/n
// carrying no loss.
//
// Two variants:
//
//   - New ("mbcd"): the paper as printed: L_F = |1 − η·β| (Lemma 4.1/B.1, which claims
//     L_F < 1 from convexity alone; it needs strong convexity), contraction exponent −1/L_T² (Theorem C.2), any
//     number of released blocks summed as if independent (Section 4.2, "no inter-block leakage").
//     Labelled accounting.Paper. Its tests check reference vectors computed independently.
//   - NewCertified ("mbcd-certified"): L_F = max(|1 − η·λ|, |1 − η·β|) from the declared
//     strong convexity λ ≥ 0 and smoothness β of the block (the Lipschitz constant of a
//     gradient step on a λ-strongly convex β-smooth function), exponent −1 (the prox is
//     post-processing; an L_T-Lipschitz prox only enters the LSI recursion), and a single
//     released block. Labelled accounting.Certified; see Requirements for what remains the
//     user's declaration.
//
// Record convention (as accounting.Step and package optim define it): Sensitivity is the
// per-example clip norm C of the block gradient, NoiseStd the noise std on the summed
// gradient, and the update divides the sum by the batch size b. So the parameter noise
// variance is (η·NoiseStd/b)² = 2η·o, o = η·NoiseStd²/(2b²), and under replace-one S_g = 2C,
// which makes Δ = 2C²/NoiseStd² = 2/z² per differing step (Theorem 4.6's Δ = η·S_g²/(4b²·o), the Gaussian mechanism's α/(2z²)
// when S_g = C). An update that sums the batch instead (s = 1, DP-MBCD's w_reduction sum, Eq. 17
// as printed) is the mean update at step size η·b, and its records declare StepSize η·b: the
// accountant then charges the summed update's true sensitivity η·S_g (Δ = 2C²/NoiseStd², b²
// times Theorem 4.6's increment for the same parameter noise with the mean's η·S_g/b) and its
// smoothness b·β (L_F = |1 − η·b·β|), without knowing which reduction ran.
package mbcd
