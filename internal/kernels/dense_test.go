package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// DenseRows against a float64 product, and each row against the same row alone, bit for bit:
// rows that go through the four-row path and the one-row path, at every offset, with widths
// that are and are not multiples of 16.
func TestDenseRows(t *testing.T) {
	if !DenseFMA() {
		t.Skip("DenseRows needs amd64 with AVX2 and FMA: this CPU lacks them")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sh := range []struct{ rows, d, n int }{
		{1, 1, 1}, {3, 5, 7}, {4, 16, 16}, {5, 17, 33}, {9, 3, 10}, {32, 784, 512}, {32, 512, 32}, {13, 32, 10}, {7, 10, 512},
	} {
		np := Pad16(sh.n)
		x := make([]float32, sh.rows*sh.d)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		w := make([]float32, sh.d*np)
		for r := 0; r < sh.d; r++ {
			for c := 0; c < sh.n; c++ {
				w[r*np+c] = float32(rng.NormFloat64())
			}
		}
		y := make([]float32, sh.rows*sh.n)
		out := make([]float32, sh.rows*np)
		DenseRows(x, sh.d, w, np, y, sh.n, sh.rows, sh.d, sh.n, out)
		one, out1 := make([]float32, sh.n), make([]float32, np)
		for r := 0; r < sh.rows; r++ {
			for c := 0; c < sh.n; c++ {
				var want, mag float64
				for k := 0; k < sh.d; k++ {
					p := float64(x[r*sh.d+k]) * float64(w[k*np+c])
					want += p
					mag += math.Abs(p)
				}
				if e := math.Abs(float64(y[r*sh.n+c]) - want); e > 1e-6*float64(sh.d)*mag+1e-30 {
					t.Fatalf("%+v: y[%d][%d] = %v, want %v", sh, r, c, y[r*sh.n+c], want)
				}
			}
			DenseRows(x[r*sh.d:(r+1)*sh.d], sh.d, w, np, one, sh.n, 1, sh.d, sh.n, out1)
			for c := range one {
				if math.Float32bits(one[c]) != math.Float32bits(y[r*sh.n+c]) {
					t.Fatalf("%+v: row %d alone gives %v at column %d, in the batch %v", sh, r, one[c], c, y[r*sh.n+c])
				}
			}
		}
	}
}

func BenchmarkDenseRows784x512(b *testing.B) {
	if !DenseFMA() {
		b.Skip("no AVX2 and FMA")
	}
	x, w, y := make([]float32, 32*784), make([]float32, 784*512), make([]float32, 32*512)
	for i := range x {
		x[i] = float32(i%7) * 0.1
	}
	for i := range w {
		w[i] = float32(i%5) * 0.1
	}
	for b.Loop() {
		DenseRows(x, 784, w, 512, y, 512, 32, 784, 512, nil)
	}
}

// The AVX-512 kernel against the AVX2 one, bit for bit, on column counts with and without a
// last block of 16 and on rows that take the four-row and the one-row paths.
func TestDense512MatchesAVX2(t *testing.T) {
	if !haveDense512 {
		t.Skip("the AVX-512 dense kernel needs AVX-512F: this CPU runs the AVX2 one only")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, sh := range []struct{ rows, d, np int }{{1, 1, 32}, {5, 17, 48}, {32, 784, 512}, {7, 512, 16}, {9, 33, 96}, {256, 100, 128}} {
		x := make([]float32, sh.rows*sh.d)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * math.Exp(3*rng.NormFloat64()))
		}
		w := make([]float32, sh.d*sh.np)
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		got, want := make([]float32, sh.rows*sh.np), make([]float32, sh.rows*sh.np)
		denseBlocks(&x[0], sh.d, w, sh.np, got, sh.np, sh.rows, sh.d)
		denseFMA(&x[0], sh.d, &w[0], sh.np, &want[0], sh.np, sh.rows, sh.d, sh.np/16)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%+v: element %d: AVX-512 %g, AVX2 %g", sh, i, got[i], want[i])
			}
		}
	}
}
