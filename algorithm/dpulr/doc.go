// Package dpulr is DP-ULR (Feng et al., "Forward Learning with Differential Privacy",
// Algorithm 1): forward-only likelihood-ratio gradient estimates from noisy forward passes,
// clipped jointly over the layers, with the privacy controller of Eq. 7 and the
// eigen-direction top-up of Section 3.2 (paper mode), or explicit Gaussian noise on the
// clipped sum with a public injected σ_l (certified mode), on Poisson batches with rejection
// (Theorem 3.6). Algorithm is the registration (section optimizer.dp_ulr).
package dpulr
