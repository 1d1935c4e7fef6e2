// Package audit runs a training run with canaries and turns how well they can be detected into
// an empirical lower bound on ε (Steinke, Nasr & Jagielski, "Privacy Auditing with One (1)
// Training Run", NeurIPS 2023; the bound itself is accounting/audit).
//
// m canaries are each included with probability 1/2, one run trains through train.Trainer, the
// auditor scores every canary, and the bound compares ε_lower with the ε every configured
// accountant reported for the same run: an accountant whose ε is below ε_lower is refuted (at
// the stated confidence). An audit can only refute, never certify.
//
// Two threat models, matching the two kinds of accountant:
//
//   - all-iterates (white-box, what composition accountants cover): gradient canaries, a
//     gradient of norm C on a random sparse support (one coordinate: a Dirac canary), injected
//     into the clipped gradient sum inside the private step (train.Options.Oracle) so that it is
//     clipped and noised like any example, each included canary joining every Poisson batch
//     with the run's sample rate q. The score is the canary direction's share of the released
//     updates, Σ_k ⟨u_i, θ_{k−1} − θ_k⟩/η_k.
//   - final-model (black-box, what hidden-state accountants cover): input-space canaries,
//     training examples with a wrong label, added to the training split (train.Options.
//     TrainSplit) so that the sampler, clipping and noise treat them like any example. The
//     score is minus the final model's loss on the canary. Under Poisson sampling (add/remove
//     neighbours) an excluded canary is absent; under fixed-size sampling (replace-one) its slot
//     holds the example with its true label, so n stays public. Under Poisson sampling n, and
//     with it q = batch_size/n, then reveal how many canaries were included, as they would for
//     any dataset; they are the same for every canary and cannot tell which ones.
//
// A step whose Poisson batch is empty skips the gradient oracle, and with it the canaries that
// would have joined it; with batches of tens of examples or more this never happens in
// practice, and it can only weaken the audit.
//
// Any algorithm that trains through train.Trainer on its training split can be audited
// against the final model: the canaries are in the split before the optimizer is built, so an
// algorithm that keeps per-example hidden state by dataset index (DP-MBCD's auxiliaries) keeps
// it for every canary at its own index, and one that needs more of the model than gradients
// (DP-ULR's forward-only access) gets the model itself, since this audit wraps nothing. One
// whose step calls the optim.GradientOracle's gradient sums can be audited against all
// iterates; a step that takes none fails that audit rather than leave its canaries out.
package audit
