// Package dpmbcd is DP-MBCD on a lifted ReLU MLP (Chen & Liu, "Hidden State Differential
// Private Mini-Batch Block Coordinate Descent", Algorithm 4 with the explicit W-update of
// Eq. 14, or the implicit one of Eq. 17): the hidden auxiliaries of package models/lifted are
// minimised exactly and never released, and each released weight block takes a noisy clipped
// proximal gradient step, one Gaussian record per block, on the batch mean of the clipped
// gradients or (w_reduction sum, Eq. 17 as printed) their sum. Algorithm and Baseline (mbcd, σ = 0
// and no clipping through the same code) are the registrations (sections optimizer.dp_mbcd
// and optimizer.mbcd).
package dpmbcd
