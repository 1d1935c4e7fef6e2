// Package dpsgld is DP-SGLD (Ryffel, Bach & Pointcheval, "Differential Privacy Guarantees for
// Stochastic Gradient Langevin Dynamics", Algorithm 1): projected noisy mini-batch gradient
// descent with Langevin noise on an L2-regularised softmax regression, released at its last
// iterate only (Theorem 3.1). Constants holds the loss and domain constants, derived from a
// public feature-norm bound by SoftmaxConstants; Decreasing is the step-size schedule of
// Corollary 3.3; Algorithm is the registration (section optimizer.dp_sgld).
package dpsgld
