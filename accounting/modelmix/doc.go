// Package modelmix accounts for the privacy of DP-SGD with ModelMix (Xiao, Wan & Devadas,
// "Differentially Private Deep Learning with ModelMix", Section 4).
//
// ModelMix restarts every gradient step from a secret uniformly random point of the box spanned
// by the last two iterates, whose sides are at least τ. Conditional on the public past, one step
// releases a Gaussian convolved with a uniform of width L = τ/η_eff in gradient-sum units
// (the reduction in the proof of Theorem 4.1, Appendix C, with L = τ·n·q/η for the
// mean-normalised update of the paper's experiments), and subsampling plus the uniform's smearing amplify privacy under
// composition. Theorem 4.1 (l2 clipping) and Corollary 4.1 (l2 + l∞ clipping to c/√p, with the
// factor T restored and the sign of 1−α fixed) give the per-step Rényi DP at integer orders α,
//
//	ρ(α) = (1/(α−1))·ln Σ_{k=0}^{α} C(α,k)·(1−q)^{α−k}·q^k·a_k^p,
//	a_k  = ∫ p1^k·p0^{1−k},   p0 = N(0,σ²) * U[−L/2, L/2],   p1 = p0(· − c/√p),
//
// composed additively over steps and converted to (ε, δ) with accounting.RDPToEpsilon.
//
// Everything is in units of the clip norm c: the bound depends only on q, the noise multiplier
// Z = σ/c, the mixing width W = L/c and p. W = 0 is plain DP-SGD, and the bound is then exactly
// the Poisson-subsampled Gaussian RDP at integer orders.
//
// LogMoments computes the a_k by the log-domain quadrature (the "numerical calculation" of the
// paper's Section 4.1); StepRDP the per-step curve; Accountant is the live accountant, caching one integral per distinct
// step; CalibrateNoise finds the smallest noise multiplier meeting a target ε.
//
// What the guarantee needs (the assumptions of Theorem 4.1's proof, Appendix C), and how it is checked: Poisson sampling, the
// Gaussian mechanism and add/remove neighbours (checked on every step); a plain SGD update, no
// momentum or Adam state built from the hidden noisy gradients (checked on the run: a run that
// declares such an update rule gets an accountant whose every Epsilon is that refusal, never a
// number, so that reports list it beside the certified ε of the same run); every
// coordinate mixed every step with a box side at least the declared width, mixing weights and
// noise kept secret (the optimizer's declaration: an optimizer that cannot promise this must
// declare MixWidth 0). The threat model lets the adversary see every iterate, so the run need
// not release only its last one.
package modelmix
