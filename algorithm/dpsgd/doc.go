// Package dpsgd is DP-SGD (Abadi et al., "Deep Learning with Differential Privacy",
// Algorithm 1): per-sample clipping, Gaussian noise on the clipped sum, division by the
// sampler's public normaliser and any update rule as post-processing; and sgd, the
// non-private baseline through the same code path (σ = 0, no clipping), whose records every
// accountant refuses. Algorithm and Baseline are their registrations.
package dpsgd
