package scatter

import (
	"math"
)

// kymatioPi is the constant kymatio's gabor_2d divides by (2·3.1415·σ²/slant), not π. Using
// it keeps the filters, and so the features, equal to kymatio's; it makes φ̂(0) = π/3.1415 ≈
// 1.0000295 instead of 1.
const kymatioPi = 3.1415

// gaborPair returns kymatio's gabor_2d(m, n, σ, θ, ξ, slant) and, in env, the same filter
// with ξ = 0 (its Gaussian envelope), both m×n row-major in the spatial domain:
//
//	g(x) = Σ_{a,b ∈ −2..2} exp(−(x+p)ᵀ·R·D·R⁻¹·(x+p)/(2σ²) + i·ξ·((x+p)₁cos θ + (x+p)₂sin θ)) · slant/(2·3.1415·σ²)
//
// with p = (a·m, b·n) (periodisation over the 5×5 neighbouring copies of the grid, so that the
// filter is centred on the origin circularly), R the rotation by θ and D = diag(1, slant²).
// The first coordinate is the row index.
func gaborPair(m, n int, sigma, theta, xi, slant float64) (g, env []complex128) {
	c, s := math.Cos(theta), math.Sin(theta)
	d := slant * slant
	den := 2 * sigma * sigma
	// R·D·R⁻¹/(2σ²); the two off-diagonal entries are equal.
	k00 := (c*c + d*s*s) / den
	k01 := (c * s * (1 - d)) / den
	k11 := (s*s + d*c*c) / den
	g = make([]complex128, m*n)
	env = make([]complex128, m*n)
	for a := -2; a <= 2; a++ {
		for r := range m {
			x := float64(r + a*m)
			for b := -2; b <= 2; b++ {
				for q := range n {
					y := float64(q + b*n)
					e := math.Exp(-(k00*x*x + 2*k01*x*y + k11*y*y))
					if e == 0 {
						continue
					}
					sn, cs := math.Sincos(xi * (x*c + y*s))
					g[r*n+q] += complex(e*cs, e*sn)
					env[r*n+q] += complex(e, 0)
				}
			}
		}
	}
	norm := complex(2*kymatioPi*sigma*sigma/slant, 0)
	for i := range g {
		g[i] /= norm
		env[i] /= norm
	}
	return g, env
}

// gabor2D is kymatio's gabor_2d: see gaborPair.
func gabor2D(m, n int, sigma, theta, xi, slant float64) []complex128 {
	g, _ := gaborPair(m, n, sigma, theta, xi, slant)
	return g
}

// morlet2D is kymatio's morlet_2d: the Gabor filter minus K times its envelope, with K = Σg/Σenv
// chosen so that the wavelet has exactly zero mean (ψ̂(0) = 0).
func morlet2D(m, n int, sigma, theta, xi, slant float64) []complex128 {
	g, env := gaborPair(m, n, sigma, theta, xi, slant)
	var sg, se complex128
	for i := range g {
		sg += g[i]
		se += env[i]
	}
	k := sg / se
	for i := range g {
		g[i] -= k * env[i]
	}
	return g
}

// realDFT returns the real part of the 2-D DFT of the m×n spatial filter f. Kymatio keeps only
// the real part ("it is zero anyway": the filters are Hermitian up to the periodisation's
// slight asymmetry), and so does this package.
func realDFT(f []complex128, m, n int) []float64 {
	x := append([]complex128(nil), f...)
	newFFT2(m, n).forward(x)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = real(v)
	}
	return out
}

// periodizeFilter is kymatio's periodize_filter_fft(f, res): it zeroes the frequencies of the
// m×n Fourier filter f outside the band kept at resolution res (rows
// [m·2^−(res+1), m·2^−(res+1) + m·(1−2^−res)) and likewise for columns) and folds the rest
// onto an (m/2^res)×(n/2^res) grid, giving the filter to multiply the spectrum of a signal
// already subsampled by 2^res. Note that the kept band is not symmetric about 0: frequency
// −m/2^(res+1) is kept and +m/2^(res+1) is not.
func periodizeFilter(f []float64, m, n, res int) []float64 {
	k := 1 << res
	mr, nr := m/k, n/k
	startX := int(float64(m) * math.Pow(2, -float64(res)-1))
	lenX := int(float64(m) * (1 - math.Pow(2, -float64(res))))
	startY := int(float64(n) * math.Pow(2, -float64(res)-1))
	lenY := int(float64(n) * (1 - math.Pow(2, -float64(res))))
	out := make([]float64, mr*nr)
	for r := range m {
		if r >= startX && r < startX+lenX {
			continue
		}
		for c := range n {
			if c >= startY && c < startY+lenY {
				continue
			}
			out[(r%mr)*nr+c%nr] += f[r*n+c]
		}
	}
	return out
}

// wavelet is one Morlet filter ψ_{j,l} in the Fourier domain; levels[res] is its
// periodizeFilter at resolution res.
type wavelet struct {
	j, l   int
	levels [][]float64
}

// filterBank is kymatio's filter_bank(M, N, J, L) for the padded size m×n.
type filterBank struct {
	m, n, J, L int
	// psi holds the J·L wavelets, j-major: psi[j·L + l].
	psi []wavelet
	// phi[res], res = 0..J−1, is the low-pass φ at resolution res.
	phi [][]float64
}

// waveletParams returns kymatio's σ, θ, ξ and slant of ψ_{j,l}.
func waveletParams(j, l, L int) (sigma, theta, xi, slant float64) {
	sigma = 0.8 * math.Pow(2, float64(j))
	// Python's int(L − L/2 − 1) with true division truncates toward zero, as Go's conversion
	// does: L/2 − 1 for even L (3 for L = 8, so θ runs from 3π/8 down to −4π/8).
	theta = float64(int(float64(L)-float64(L)/2-1)-l) * math.Pi / float64(L)
	xi = 3.0 / 4.0 * math.Pi / math.Pow(2, float64(j))
	slant = 4.0 / float64(L)
	return
}

// phiSigma is the width of kymatio's low-pass filter, 0.8·2^(J−1).
func phiSigma(J int) float64 { return 0.8 * math.Pow(2, float64(J-1)) }

func newFilterBank(m, n, J, L int) *filterBank {
	b := &filterBank{m: m, n: n, J: J, L: L}
	// Kymatio keeps min(j+1, max(J−1, 1)) resolutions of ψ_j: resolution 0 for order 1 and
	// resolution j1 < j for order 2 after |x ⋆ ψ_{j1}| was subsampled by 2^j1.
	for j := range J {
		for l := range L {
			sigma, theta, xi, slant := waveletParams(j, l, L)
			f := realDFT(morlet2D(m, n, sigma, theta, xi, slant), m, n)
			w := wavelet{j: j, l: l}
			for res := range min(j+1, max(J-1, 1)) {
				w.levels = append(w.levels, periodizeFilter(f, m, n, res))
			}
			b.psi = append(b.psi, w)
		}
	}
	f := realDFT(gabor2D(m, n, phiSigma(J), 0, 0, 1), m, n)
	for res := range J {
		b.phi = append(b.phi, periodizeFilter(f, m, n, res))
	}
	return b
}
