// Package train runs private training: the configuration schema and its validation, the loop
// and its per-step hooks (live privacy accounting, metrics, progress, logging), evaluation and
// atomic checkpoints. It holds no algorithm mathematics: that lives in algorithm/, optim and accounting.
//
// # Algorithms
//
// An algorithm (optimizer.algorithm) is one Algorithm value in a registry (Algorithms);
// Builtin returns the shipped ones (algorithm/builtin: dp-sgd, sgd, dp-sgld, modelmix, dp-ulr,
// dp-mbcd, mbcd). Nothing else in train or cmd names an algorithm. Each is one directory under
// algorithm/ holding its step, its declarations, its section, its checks and its registration
// (see package algorithm); adding one is a new directory and one line in algorithm/builtin, or
// one Register call on a registry of one's own (algorithm/internal/toyalg, toy_test.go).
//
// noise_multiplier: auto calibrates σ through the algorithm's own declarer (Plan.NewOptimizer
// with σ = 1, then DeclareStep for every planned step, every record replayed): an optimizer that does not declare, or a Plan with NoAuto set, is
// refused, never calibrated as another algorithm.
package train
