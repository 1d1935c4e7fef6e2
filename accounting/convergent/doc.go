// Package convergent implements the hidden-state Rényi-DP accountants of Chien & Li,
// "Convergent Privacy Loss of Noisy-SGD without Convexity and Smoothness" (Eq. 1 there), for
// projected noisy SGD that releases only its last iterate:
//
//	W_{t+1} = Π_𝒦[ W_t − η·(1/b)·Σ_{i∈B_t} clip_K(∇ℓ_i(W_t)) + N(0, σ²I) ].
//
// The accountants are live accounting.Accountant values fed the same accounting.Step records as
// the composition accountants:
//
//   - FullBatch: Theorem 3.1 (L-smooth: non-convex c = 1+ηL, convex c = 1, strongly convex
//     c = 1−ηm) with the noise split and shift allocation solved in closed form by
//     water-filling (the minimisation of Eqs. 11–12 done exactly: the per-step split of the
//     noise between composition and shift has the closed form (u+a)², then KKT), and
//     Theorem 3.7 ((L,λ)-Hölder gradients, λ < 1) by an exactly feasible grid dynamic program
//     over the shift path A_{t−1} = h(A_t + a_{t−1}).
//   - Subsampled: Theorem 3.12 (fixed-size batches drawn without replacement, i.i.d. across
//     steps), with the sampled-Gaussian cost S_α(q, s) of Definition 3.11 folded into the per-step cost
//     φ_α(a) = min over β of S_α(q, √β·σ/u_b) + α·a²/(2σ²(1−β)). For smooth losses the path constraint is linear and a Lagrangian
//     allocation over blocks of steps on the convex hull of a log-spaced φ_α table solves it
//     (blocks.go; the grid program cannot follow a slow strongly convex contraction and never
//     reached the plateau); for Hölder gradients the same grid dynamic program. Labelled
//     accounting.Paper: the paper proves Theorem 3.12 only in outline (App. A.3, resting on
//     Altschuler & Talwar's mini-batch coupling).
//   - Cyclic: Theorem A.1 for shuffled cyclic batches (fresh or one-time permutation), made data
//     independent by bounding the worst case over the step at which the differing example is
//     used in each epoch (Corollary A.3 is not shipped: the authors say, in Section 5, it cannot be computed in a
//     numerically stable way).
//   - OutputPerturbation: the last-step Gaussian baseline of the paper's Figure 1, with the
//     sensitivity corrected for noise added before the projection (Eq. 1 does not project
//     ψ(W_{T−1}) before the noise).
//
// New returns the accountant the modes registry calls "chien-li": it picks the theorem from the
// sampling scheme of the first step and refuses Poisson sampling, which no theorem here covers.
//
// Step conventions (shared with accounting/sgld): NoiseStd (or NoiseMultiplier·Sensitivity) is
// the std of the Gaussian noise added to the sum of the b clipped per-example gradients, so the
// noise in parameter space is σ = η·NoiseStd/b; Sensitivity is the clip norm (0: no clipping);
// the gradient bound K is the smaller of Run.Lipschitz and the clip norm. Neighbouring datasets
// differ by replacing one example (the paper's relation, sensitivity 2ηK/b).
//
// Every bound is a minimum over feasible certificates (cut time τ, shifts a_t, noise split
// β_t), so an optimiser that misses the optimum only costs tightness, never soundness; the
// composition bound (τ = 0) is always among the candidates. RDP at order α is converted to
// (ε, δ) with accounting.RDPToEpsilon and rounded up.
package convergent
