package scattering

import (
	"math"
	"math/cmplx"
)

// gabor returns the n×n Gabor filter of kymatio's gabor_2d in the spatial domain, periodised
// over the 5×5 neighbouring copies of the grid so that it is centred at the origin circularly:
//
//	g(x) = exp(−xᵀ·R·diag(1, s²)·Rᵀ·x/(2σ²) + i·ξ·(x₁cos θ + x₂sin θ)) · s/(2πσ²).
func gabor(n int, sigma, theta, xi, slant float64) []complex128 {
	c, s := math.Cos(theta), math.Sin(theta)
	// R·D·R⁻¹ / (2σ²) with D = diag(1, slant²).
	d := slant * slant
	a := (c*c + d*s*s) / (2 * sigma * sigma)
	b := (c*s - d*s*c) / (2 * sigma * sigma) // off-diagonal entries, each
	e := (s*s + d*c*c) / (2 * sigma * sigma)
	g := make([]complex128, n*n)
	for ex := -2; ex <= 2; ex++ {
		for ey := -2; ey <= 2; ey++ {
			for i := 0; i < n; i++ {
				x := float64(i + ex*n)
				for j := 0; j < n; j++ {
					y := float64(j + ey*n)
					re := -(a*x*x + 2*b*x*y + e*y*y)
					im := xi * (x*c + y*s)
					g[i*n+j] += cmplx.Exp(complex(re, im))
				}
			}
		}
	}
	norm := complex(2*kymatioPi*sigma*sigma/slant, 0)
	for i := range g {
		g[i] /= norm
	}
	return g
}

// morlet is kymatio's morlet_2d: the Gabor filter minus the multiple of its envelope that gives
// it zero mean.
func morlet(n int, sigma, theta, xi, slant float64) []complex128 {
	wv := gabor(n, sigma, theta, xi, slant)
	env := gabor(n, sigma, theta, 0, slant)
	var sw, se complex128
	for i := range wv {
		sw += wv[i]
		se += env[i]
	}
	k := sw / se
	for i := range wv {
		wv[i] -= k * env[i]
	}
	return wv
}

// fourierReal returns the real part of the filter's DFT (the filters are Hermitian, so their
// transforms are real up to round-off), as kymatio's filter bank stores them.
func fourierReal(f []complex128, n int) []float64 {
	x := append([]complex128(nil), f...)
	newFFT2(n).forward(x)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = real(v)
	}
	return out
}

// lowPassCrop returns kymatio's periodize_filter_fft(f, res): the low-frequency part of an n×n
// Fourier filter folded onto n/2^res × n/2^res, for signals already subsampled by 2^res.
func lowPassCrop(f []float64, n, res int) []float64 {
	if res == 0 {
		return append([]float64(nil), f...)
	}
	k := 1 << res
	m := n / k
	lenX := int(float64(n) * (1 - math.Pow(2, -float64(res))))
	start := int(float64(n) * math.Pow(2, -float64(res)-1))
	out := make([]float64, m*m)
	for r := 0; r < n; r++ {
		if r >= start && r < start+lenX {
			continue
		}
		for c := 0; c < n; c++ {
			if c >= start && c < start+lenX {
				continue
			}
			out[(r%m)*m+c%m] += f[r*n+c]
		}
	}
	return out
}

// bank holds the Fourier-domain filters: psi[j][θ][res] for res = 0..j, phi[res] for res =
// 0..J.
type bank struct {
	psi [][][][]float64
	phi [][]float64
}

func newBank(n, J, L int) bank {
	var b bank
	slant := 4 / float64(L)
	for j := 0; j < J; j++ {
		var angles [][][]float64
		for l := 0; l < L; l++ {
			theta := float64(L/2-1-l) * math.Pi / float64(L)
			sigma := 0.8 * math.Pow(2, float64(j))
			xi := 3.0 / 4.0 * math.Pi / math.Pow(2, float64(j))
			f := fourierReal(morlet(n, sigma, theta, xi, slant), n)
			levels := make([][]float64, j+1)
			for res := 0; res <= j; res++ {
				levels[res] = lowPassCrop(f, n, res)
			}
			angles = append(angles, levels)
		}
		b.psi = append(b.psi, angles)
	}
	f := fourierReal(gabor(n, 0.8*math.Pow(2, float64(J-1)), 0, 0, 1), n)
	for res := 0; res <= J; res++ {
		b.phi = append(b.phi, lowPassCrop(f, n, res))
	}
	return b
}

// kymatioPi is the π of kymatio's gabor_2d normalisation, which divides by the literal 3.1415;
// kept so the features equal kymatio's (φ̂(0) = π/3.1415 rather than 1).
const kymatioPi = 3.1415
