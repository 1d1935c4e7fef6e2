// Package train runs private training from a config (package config): the loop and its
// per-step hooks (live privacy accounting, metrics, progress, logging), evaluation, and the
// run directory's checkpoints, ledger and summary, written in the layout of package rundir. It
// holds no algorithm mathematics: that lives in algorithm/, optim and accounting.
//
// The algorithm a run uses is looked up in Options.Algorithms (config.Builtin when nil).
// noise_multiplier: auto calibrates σ through the algorithm's own declarer
// (algorithm.Plan.NewOptimizer with σ = 1, then DeclareStep for every planned step, every
// record replayed): an optimizer that does not declare, or a Plan with NoAuto set, is refused,
// never calibrated as another algorithm.
package train
