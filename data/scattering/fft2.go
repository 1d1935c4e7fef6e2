package scattering

import "gonum.org/v1/gonum/dsp/fourier"

// fft2 is a 2-D complex FFT of an n×n array (row-major) by rows then columns.
type fft2 struct {
	n   int
	fft *fourier.CmplxFFT
	col []complex128
	out []complex128
}

func newFFT2(n int) *fft2 {
	return &fft2{n: n, fft: fourier.NewCmplxFFT(n), col: make([]complex128, n), out: make([]complex128, n)}
}

// forward replaces x by its unnormalised DFT.
func (f *fft2) forward(x []complex128) { f.apply(x, false) }

// inverse replaces x by its inverse DFT, normalised by 1/n².
func (f *fft2) inverse(x []complex128) {
	f.apply(x, true)
	s := complex(1/float64(f.n*f.n), 0)
	for i := range x {
		x[i] *= s
	}
}

func (f *fft2) apply(x []complex128, inv bool) {
	n := f.n
	for r := 0; r < n; r++ {
		row := x[r*n : (r+1)*n]
		if inv {
			f.fft.Sequence(f.out, row)
		} else {
			f.fft.Coefficients(f.out, row)
		}
		copy(row, f.out)
	}
	for c := 0; c < n; c++ {
		for r := 0; r < n; r++ {
			f.col[r] = x[r*n+c]
		}
		if inv {
			f.fft.Sequence(f.out, f.col)
		} else {
			f.fft.Coefficients(f.out, f.col)
		}
		for r := 0; r < n; r++ {
			x[r*n+c] = f.out[r]
		}
	}
}

// periodize writes to dst (n/k × n/k) the mean of the k×k folded blocks of src (n×n): in the
// Fourier domain this is the transform of the signal subsampled by k in each direction
// (kymatio's subsample_fourier).
func periodize(dst, src []complex128, n, k int) {
	m := n / k
	clear(dst[:m*m])
	for r := 0; r < n; r++ {
		for c := 0; c < n; c++ {
			dst[(r%m)*m+c%m] += src[r*n+c]
		}
	}
	s := complex(1/float64(k*k), 0)
	for i := range dst[:m*m] {
		dst[i] *= s
	}
}
