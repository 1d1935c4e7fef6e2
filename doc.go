// Package dptrain trains models with differential privacy: a Session couples a sampler, a
// private optimizer (DP-SGD; Abadi et al. 2016, "Deep Learning with Differential Privacy",
// Algorithm 1), live privacy accountants and the rule that stops before a target ε is
// exceeded, in the spirit of Opacus's make_private.
//
//	sess, err := dptrain.MakePrivateWithEpsilon(model, x, y, dptrain.Config{
//		BatchSize: 64, ClipNorm: 1, LearningRate: 0.5, Epochs: 5,
//		Delta: 1e-5, TargetEpsilon: 2,
//	})
//	...
//	err = sess.Run(ctx, nil)
//	eps, err := sess.CertifiedEpsilon()
//
// The model is anything that implements optim.GradientOracle: a models.Network (MLP, CNN,
// logistic regression) or a type of your own that computes clipped per-example gradient sums.
//
// MakePrivate and MakePrivateWithEpsilon build a DP-SGD session over in-memory data.
// NewSession runs any optimizer (the algorithms under algorithm/) from Parts: the model, the
// data, the optimizer's configuration (a Mechanism: how to build it from σ and a noise stream)
// and the privacy settings. The caller never supplies a sampler, a batch declaration or a noise
// stream: NewPlan builds the sampler (a data.Sampler over the data), the streams, the
// optimizer, the accountants and the stop rule from Parts, and checks every rule there; the
// YAML trainer (package train) builds its runs with the same NewPlan. A Session's Checkpoint and
// Restore continue it later, composing the restored ledger again. Refusals are typed errors
// (*ConfigError, *LedgerError, *StepError) to inspect with errors.As.
//
// # Privacy contract, in brief
//
//   - The optimizer declares what each step released (mechanism, noise multiplier,
//     sensitivity), the sampler declares how it drew the batch (scheme, rate, dataset size),
//     and an accountant interprets the records. A Session draws every batch from its own
//     sampler, so its records cannot describe a scheme other than the one that drew the batch.
//   - Every step that ran is composed into every accountant before Step returns; ε is never
//     given back. If a step cannot be put on record, or the optimizer or the sampler moved
//     without the session (steps taken outside it), the session stops with a *LedgerError.
//   - With Config.TargetEpsilon set, Step refuses (ErrBudgetExhausted) any step after which the
//     stopping accountant's ε would exceed the target, before touching the data. The stopping
//     accountant must be certified (its theorem's assumptions are declared and checked), and
//     δ below 1/n.
//   - Each ε carries a label: certified (an upper bound whose assumptions were checked),
//     paper (the paper's formula where a gap is known) or approximate.
//   - Noise and sampling are seeded from crypto/rand. Config.Seed makes a run reproducible and
//     not private: Private reports false, and such a run must never be released.
//   - The per-step Stats (loss, accuracy on the batch) are computed from private data without
//     noise: monitor them, never release them.
//
// The accounting package and its subpackages compute ε for a run described by its records
// alone (see the examples); the train package is the YAML-driven trainer.
package dptrain
