// Package sgld accounts for DP-SGLD (Ryffel, Bach & Pointcheval, "Differential Privacy
// Guarantees for Stochastic Gradient Langevin Dynamics", Algorithm 1): projected noisy SGD
//
//	θ_{k+1} = Π_𝒞(θ_k − η_k·∇L_{B_k}(θ_k) + sqrt(2η_k)·σ·Z_k),   Z_k ~ N(0, I_d),
//
// on a λ-strongly convex, β-smooth, L-Lipschitz loss, releasing only the last iterate.
//
// The bound (Theorem 3.1, a c-LSI argument with c = λ/(2σ²)) is linear in the Rényi order α,
//
//	ε(α) = α·ρ_K,   ρ_K = ρ_∞·(1 − exp(−(λ/2)·Σ_k η_k)),   ρ_∞ = 4L²/(λ n² σ²),
//
// so a live accountant needs only the running sum of the step sizes actually applied: O(1) per
// step. Corollary 3.2 (constant η) and Corollary 3.3 (η_k = 1/(2β + λk/2)) are special cases;
// the accountant always uses the exact running sum, never the closed forms (Corollary 3.3's integral can undershoot the sum by up to η_0).
//
// Two variants:
//
//   - New ("sgld"): the paper's sensitivity lemma, S_g = 2L/n whatever the batch size m. Its
//     one-line proof is incomplete (it multiplies the prior inclusion probability
//     m/n into the drift), so minibatch runs are labelled accounting.Paper. A full-batch run is
//     Chourasia, Ye & Shokri (2021), Theorem 2, whose proof is complete: labelled Certified.
//   - NewConservative ("sgld-conservative"): condition on the batch-index sequence (identically
//     distributed under both datasets) and take the worst sequence. At a step whose batch holds
//     the differing example the drift differs by at most 2L/m, otherwise not at all, so
//     Theorem 3.1's per-step recursion gives
//     ρ_{k+1} = a_k·ρ_k + 1[i0 ∈ B_k]·(1 − a_k)·4L²/(λσ²m_k²),  a_k = exp(−λη_k/2),
//     and by the joint convexity of exp((α−1)R_α) the mixture over sequences is bounded by the
//     worst one. For fresh subsets every step the worst sequence holds i0 in every batch; for
//     epoch-wise shuffling (Shuffled, ShuffledOnce) it holds i0 in exactly one batch per epoch,
//     at the position a two-state dynamic programme picks. For the same worst sequence plain
//     RDP composition of its Gaussian steps, Σ η_k·L²/(m_k²σ²), is also a bound (it needs no
//     convexity) and is smaller while K ≪ β/λ; the variant reports the smaller. Labelled
//     Certified.
//
// Record convention. A Step's NoiseStd is the standard deviation of the Gaussian noise on the
// summed gradient whose per-example bound is Sensitivity (accounting.Step), and the parameter
// update divides that sum by the batch size m: the parameter-space noise is η·NoiseStd/m, so
// the Langevin σ of the step is NoiseStd·sqrt(η/2)/m. DeclareStep builds such a record from σ.
//
// What is checked automatically (from accounting.Run and every Step) and what the user asserts
// is listed in Requirements.
package sgld
