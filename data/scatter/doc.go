// Package scatter computes the 2-D scattering transform ("ScatterNet") of images: a fixed,
// data-independent cascade of Morlet wavelet convolutions, complex moduli and Gaussian
// low-pass averaging (Mallat 2012, "Group invariant scattering"; Bruna & Mallat 2013,
// "Invariant scattering convolution networks", IEEE TPAMI 35(8)). Tramèr & Boneh (2021,
// "Differentially private learning needs better features (or much more data)", ICLR) showed
// that linear models and small CNNs trained with DP-SGD on these features beat end-to-end
// DP-SGD on raw pixels. The transform looks at no data, so computing it costs no privacy; the
// optional per-example GroupNorm (see Normalization) is data-independent in the same sense.
//
// # Definition
//
// The filter bank, padding and multi-resolution algorithm follow kymatio's Scattering2D
// (Andreux et al. 2020, JMLR 21(60)), which Tramèr & Boneh used with J = 2, L = 8:
//
//   - wavelets ψ_{j,l}, j = 0..J−1, l = 0..L−1: kymatio's morlet_2d with σ = 0.8·2^j,
//     ξ = 3π/(4·2^j), slant 4/L and angle θ = (int(L−L/2−1) − l)·π/L, periodised over the
//     5×5 neighbouring copies of the padded grid, stored as the real part of their DFT;
//   - the low-pass φ: kymatio's gabor_2d with σ = 0.8·2^(J−1), ξ = 0, slant 1;
//   - the input is reflect-padded to kymatio's compute_padding size
//     ((H + 2^J) div 2^J + 1)·2^J × ((W + 2^J) div 2^J + 1)·2^J, convolutions are products
//     in the Fourier domain, subsampling by 2^k is periodisation (averaging the 2^k × 2^k
//     aliases) of the spectrum, and the final 2^J-subsampled maps lose one border sample on
//     each side (kymatio's unpad).
//
// For J scales and L angles each input channel yields K = 1 + J·L + L²·J(J−1)/2 channels of
// ⌊H/2^J⌋ × ⌊W/2^J⌋: 81 channels of 7×7 for a 28×28 image with J = 2, L = 8.
//
// # Channel order
//
// Kymatio's order, per input channel:
//
//	k = 0                      order 0: x ⋆ φ_J
//	k = 1 + j1·L + l1          order 1: |x ⋆ ψ_{j1,l1}| ⋆ φ_J, by (j1, l1)
//	k = 1 + J·L + …            order 2: ||x ⋆ ψ_{j1,l1}| ⋆ ψ_{j2,l2}| ⋆ φ_J, by (j1, l1, j2, l2)
//	                           with j2 > j1, l2 varying fastest
//
// For C input channels the output holds C·K channels, channel-major: input channel c's K
// outputs are channels c·K … c·K + K − 1. Outputs are CHW float32.
//
// # Use
//
// New builds a transform for one image size (filters are computed once); Apply transforms one
// image without allocating, given a per-goroutine Workspace. Features transforms both splits
// of a data.Dataset in parallel, and CachedFeatures keeps the result in a SHA-256-checked file.
package scatter
