// Package scattering computes the 2-D scattering transform (Mallat 2012; Bruna & Mallat 2013)
// of images: a fixed, data-independent cascade of Morlet wavelet convolutions, complex moduli
// and Gaussian low-pass averaging. Tramèr & Boneh (2021, "Differentially private learning needs
// better features") showed that private linear models and small CNNs trained on these
// "ScatterNet" features beat end-to-end DP-SGD on pixels; because the transform looks at no
// data, it costs no privacy.
//
// The filter bank and the multi-resolution algorithm follow kymatio's Scattering2D: Morlet
// filters ψ_{j,θ} with σ = 0.8·2^j, ξ = 3π/(4·2^j), slant 4/L and angles θ = (⌊L/2⌋−1−l)·π/L,
// periodised over the padded image; a Gaussian low-pass φ with σ = 0.8·2^(J−1); reflect padding
// to a multiple of 2^J with a border; subsampling by periodisation in the Fourier domain; even
// kymatio's division by the literal 3.1415 in its Gabor normalisation. The output matches
// kymatio's own regression data (tests/scattering2d/test_data_2d.npz, J = 4, 3×32×32) to 0.13
// of numpy.allclose's tolerance: see TestKymatioReference. Non-square images are padded to a
// square grid (kymatio pads each side separately), so their coefficients are close to, not
// equal to, kymatio's.
//
// For J scales and L angles each input channel gives K = 1 + J·L + L²·J(J−1)/2 channels at
// resolution ⌊H/2^J⌋ × ⌊W/2^J⌋ (81 channels of 7×7 for a 28×28 image with J = 2, L = 8), in
// kymatio's order: the order-0 channel (φ-averaged image); the order-1 channels by (j1, θ1);
// the order-2 channels by (j1, θ1, j2, θ2) with j2 > j1. For C input channels, channel c's K
// outputs are contiguous.
package scattering
