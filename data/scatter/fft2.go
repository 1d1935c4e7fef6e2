package scatter

import "gonum.org/v1/gonum/dsp/fourier"

// fft2 computes unnormalised 2-D DFTs of m×n row-major complex arrays in place, as 1-D
// transforms of the rows followed by 1-D transforms of the columns (the 2-D DFT is separable).
// Its conventions are numpy's fft2/ifft2 without ifft2's 1/(m·n): forward is
// X[u,v] = Σ x[r,c]·exp(−2πi(ur/m + vc/n)) and inverse uses exp(+…). It keeps gonum's
// scratch space, so one fft2 serves one goroutine; it does not allocate after construction.
type fft2 struct {
	m, n       int
	rows, cols *fourier.CmplxFFT
	col        []complex128
}

func newFFT2(m, n int) *fft2 {
	f := &fft2{m: m, n: n, rows: fourier.NewCmplxFFT(n), col: make([]complex128, m)}
	if m == n {
		f.cols = f.rows // rows and columns are transformed one after the other
	} else {
		f.cols = fourier.NewCmplxFFT(m)
	}
	return f
}

// forward replaces x (m·n values) by its DFT.
func (f *fft2) forward(x []complex128) { f.transform(x, false) }

// inverse replaces x by its unnormalised inverse DFT: m·n times numpy's ifft2.
func (f *fft2) inverse(x []complex128) { f.transform(x, true) }

func (f *fft2) transform(x []complex128, inverse bool) {
	m, n := f.m, f.n
	x = x[:m*n]
	for r := range m {
		row := x[r*n : (r+1)*n]
		if inverse {
			f.rows.Sequence(row, row)
		} else {
			f.rows.Coefficients(row, row)
		}
	}
	col := f.col
	for c := range n {
		for r := range m {
			col[r] = x[r*n+c]
		}
		if inverse {
			f.cols.Sequence(col, col)
		} else {
			f.cols.Coefficients(col, col)
		}
		for r := range m {
			x[r*n+c] = col[r]
		}
	}
}
