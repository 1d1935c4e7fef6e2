// Package train runs private training: the configuration schema and its validation, the loop
// and its per-step hooks (live privacy accounting, metrics, progress, logging), evaluation and
// atomic checkpoints. It holds no algorithm mathematics: that lives in optim and accounting.
//
// # Algorithms
//
// An algorithm (optimizer.algorithm) is one Algorithm value in a registry (Algorithms);
// Builtin returns the shipped ones (algorithms.go: dp-sgd, sgd, dp-sgld, modelmix, dp-ulr, dp-mbcd, mbcd). Nothing
// else in train or cmd names an algorithm. To add one:
//
//  1. Write its step in one file of optim: a type implementing optim.Optimizer, optim.Declarer
//     and optim.StepDeclarer (the records step k will release, without touching data or
//     randomness; every record's noise linear in σ; a step may release several records, all
//     composed before the overshoot check) and optim.Checkpointer (its state for resuming); also
//     optim.Initializer if it draws its own initial iterate.
//  2. Add one Algorithm to the list in Builtin (or Register it on a registry of your own, as
//     toy_test.go does): its Name; whether it is Private and takes optimizer.clip_norm; the
//     Sampling schemes it accepts (first = default) and the default Accountants; its config
//     Section under optimizer: with NewSection returning the section's struct with defaults
//     (decoded strictly); Validate for its own keys; Prepare, which checks the run (model,
//     dataset, constants) and returns a Plan: the accounting.Run it declares and a function
//     building its optimizer for a given σ; and Compare, its part of `dptrain account compare
//     --config`.
//
// noise_multiplier: auto calibrates σ through the algorithm's own declarer (Plan.NewOptimizer
// with σ = 1, then DeclareStep for every planned step, every record replayed): an optimizer that does not declare, or a Plan with NoAuto set, is
// refused, never calibrated as another algorithm.
package train
