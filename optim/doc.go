// Package optim holds what the private training algorithms' steps share: the Optimizer
// interface and its companions (Declarer, StepDeclarer, Checkpointer, BlockReleaser,
// Initializer), a step's Result, the validation of a sampler's batch declaration and the
// records built from it (PlanBatch, BatchPlan.Record, Normaliser), the base update rules
// applied to a privatised gradient as post-processing (SGD, momentum, Adam, weight decay),
// learning-rate schedules, per-sample clipping (l2, and ModelMix's l2+l∞), the state entries
// the update rules keep across a resume, and secure noise. The algorithms themselves are one
// package each under algorithm/: DP-SGD (Abadi et al., "Deep Learning with Differential
// Privacy"), DP-SGLD (Ryffel, Bach & Pointcheval, "Differential Privacy Guarantees for
// Stochastic Gradient Langevin Dynamics", Algorithm 1), DP-SGD with ModelMix (Xiao, Wan &
// Devadas, "Differentially Private Deep Learning with ModelMix", Algorithm 1), DP-ULR (Feng
// et al., "Forward Learning with Differential Privacy", Algorithm 1) and DP-MBCD (Chen & Liu,
// "Hidden State Differential Private Mini-Batch Block Coordinate Descent", Algorithm 4).
//
// # Records
//
// Every step returns the accounting.Step records of what it released; optim keeps no privacy
// ledger. All records use the units of the released gradient sum: a step computes
//
//	θ ← post-processing(θ, (StepSize/b)·(Σ_i contribution_i + N(0, NoiseStd²·I)))
//
// where each example's contribution has l2 norm at most Sensitivity (the clip norm, or DP-SGLD's
// Lipschitz constant) and b is the fixed normaliser (q·n for Poisson sampling, the batch size
// for fixed-size schemes). NoiseMultiplier = NoiseStd/Sensitivity, whatever the adjacency:
// an accountant for replace-one neighbours doubles the sensitivity itself. ModelMix's MixWidth
// is in the same units.
//
// A step run without noise (the non-private baseline, NoiseMultiplier 0) still returns a
// record, with Mechanism accounting.NonPrivate: every accountant refuses it, so such a run can
// never be reported with a finite ε.
//
// # Noise
//
// Noise is a ChaCha8 stream seeded from crypto/rand (NewNoise). NewSeededNoise gives
// reproducible runs, which are not private; Noise.Split derives independent streams, for
// example the sampler's. Gaussian noise is drawn with a 256-layer ziggurat in float64, 53 bits
// per layer, from AES-256-CTR keystreams; it is added to the sum in float64 and the noisy sum is
// rounded to a public grid Δ·Z, Δ = 2^(⌊log₂ std⌋ − 20) fixed by the noise's standard deviation
// alone, before it is stored as float32 (and, for DP-SGD and ModelMix, scaled by 1/b). This
// defends against floating-point attacks on the release (Mironov 2012; Jin, McMurtry,
// Rubinstein & Ohrimenko 2022): every grid cell holds millions of the sampler's noise values
// for any input, so no released value rules out another input, and the rounding is
// post-processing of the Gaussian mechanism, so sensitivity and accounting are unchanged. What
// remains is the sampled law's relative error against the exact Gaussian on each cell (about
// 2^−29 to 2^−20, not accounted for), as for every floating-point sampler. It costs about 1.5
// times the previous float32 sampler: 4.3 against 2.9 ns of CPU time per coordinate.
//
// # Resuming
//
// The algorithms' optimizers implement Checkpointer: State returns the step counter (which
// drives the schedule, so a resumed run continues at η_k) and the update rule's buffers
// (RuleState, RestoreRuleSteps) or the algorithm's own state; Restore checks and loads them. A seeded Noise saves its position
// with MarshalBinary and resumes with UnmarshalBinary; a secure one refuses to be saved, and a
// resumed secure run draws a fresh stream with NewNoise. With the parameters, the state and the
// noise restored, a resumed run is bit-identical to one that never stopped.
//
// # Run-level declarations
//
// Optimizer.UpdateRule and Optimizer.Stateful give accounting.Run's UpdateRule and tell the
// trainer whether noisy gradients are carried across steps (momentum, Adam), which
// hidden-state accountants refuse.
package optim
