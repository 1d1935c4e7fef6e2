package scattering

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"
)

// smoothImage is a 28×28 test image: a few Gaussian blobs and a ramp.
func smoothImage(h, w int, shift int) []float32 {
	img := make([]float32, h*w)
	for r := range h {
		for c := range w {
			x, y := float64(c-shift), float64(r)
			v := math.Exp(-((x-9)*(x-9)+(y-12)*(y-12))/18) + 0.7*math.Exp(-((x-18)*(x-18)+(y-8)*(y-8))/10) + 0.01*y
			img[r*w+c] = float32(v)
		}
	}
	return img
}

// circConv is the direct circular convolution of two n×n arrays, the reference for the FFT path.
func circConv(x, k []complex128, n int) []complex128 {
	out := make([]complex128, n*n)
	for r := range n {
		for c := range n {
			var sum complex128
			for a := range n {
				for b := range n {
					sum += x[a*n+b] * k[((r-a+n)%n)*n+(c-b+n)%n]
				}
			}
			out[r*n+c] = sum
		}
	}
	return out
}

func TestFFTRoundTripAndConvolution(t *testing.T) {
	for _, n := range []int{9, 18, 36} {
		rng := rand.New(rand.NewPCG(1, uint64(n)))
		x, f := make([]complex128, n*n), make([]complex128, n*n)
		for i := range x {
			x[i] = complex(rng.NormFloat64(), 0)
			f[i] = complex(rng.NormFloat64(), rng.NormFloat64())
		}
		direct := circConv(x, f, n)
		ft := newFFT2(n)
		X, F := append([]complex128(nil), x...), append([]complex128(nil), f...)
		ft.forward(X)
		ft.forward(F)
		for i := range X {
			X[i] *= F[i]
		}
		ft.inverse(X)
		for i := range X {
			if cmplx.Abs(X[i]-direct[i]) > 1e-9*(1+cmplx.Abs(direct[i])) {
				t.Fatalf("n = %d: FFT convolution %v, direct %v at %d", n, X[i], direct[i], i)
			}
		}
		// Round trip.
		y := append([]complex128(nil), x...)
		ft.forward(y)
		ft.inverse(y)
		for i := range y {
			if cmplx.Abs(y[i]-x[i]) > 1e-12 {
				t.Fatalf("n = %d: round trip %v, want %v", n, y[i], x[i])
			}
		}
	}
}

// TestPeriodizeIsSubsampling: folding the spectrum by k is the spectrum of the signal
// subsampled by k (the identity kymatio's subsample_fourier relies on).
func TestPeriodizeIsSubsampling(t *testing.T) {
	n, k := 36, 4
	m := n / k
	rng := rand.New(rand.NewPCG(2, 3))
	x := make([]complex128, n*n)
	for i := range x {
		x[i] = complex(rng.NormFloat64(), 0)
	}
	X := append([]complex128(nil), x...)
	newFFT2(n).forward(X)
	P := make([]complex128, m*m)
	periodize(P, X, n, k)
	newFFT2(m).inverse(P)
	for r := range m {
		for c := range m {
			if d := cmplx.Abs(P[r*m+c] - x[r*k*n+c*k]); d > 1e-9 {
				t.Fatalf("(%d,%d): %v, want %v", r, c, P[r*m+c], x[r*k*n+c*k])
			}
		}
	}
}

func TestFilterBank(t *testing.T) {
	n, J, L := 36, 2, 8
	b := newBank(n, J, L)
	if want := math.Pi / kymatioPi; math.Abs(b.phi[0][0]-want) > 1e-6 {
		t.Errorf("φ̂(0) = %v, want π/3.1415 = %v (kymatio's normalised Gaussian)", b.phi[0][0], want)
	}
	lp := make([]float64, n*n)
	for i := range lp {
		lp[i] = b.phi[0][i] * b.phi[0][i]
	}
	for j := range J {
		for l := range L {
			psi := b.psi[j][l][0]
			if math.Abs(psi[0]) > 1e-9 {
				t.Errorf("ψ̂_{%d,%d}(0) = %v: a Morlet wavelet has zero mean", j, l, psi[0])
			}
			for r := range n {
				for c := range n {
					neg := ((n-r)%n)*n + (n-c)%n
					lp[r*n+c] += (psi[r*n+c]*psi[r*n+c] + psi[neg]*psi[neg]) / 2
				}
			}
		}
	}
	lo, hi := math.Inf(1), 0.0
	for _, v := range lp {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	t.Logf("Littlewood–Paley sum over the grid: [%.4f, %.4f]", lo, hi)
	// The J = 2 bank covers only the upper frequencies down to φ's band: the sum is bounded
	// and bounded away from 0 (a frame), though not tight.
	if hi > 2 || lo < 0.05 {
		t.Errorf("Littlewood–Paley sum in [%v, %v]: the filters do not form a stable frame", lo, hi)
	}
}

func TestShapes(t *testing.T) {
	tests := []struct {
		h, w, J, L, C int
		want          []int
	}{
		{28, 28, 2, 8, 1, []int{81, 7, 7}},
		{32, 32, 2, 8, 3, []int{243, 8, 8}},
		{28, 28, 1, 8, 1, []int{9, 14, 14}},
		{32, 32, 3, 4, 1, []int{1 + 12 + 16*3, 4, 4}},
		{16, 24, 2, 4, 2, []int{2 * 25, 4, 6}},
		{28, 28, 3, 8, 1, []int{1 + 24 + 64*3, 3, 3}}, // ⌊28/8⌋, as kymatio
	}
	for _, tt := range tests {
		s, err := New(tt.h, tt.w, tt.J, tt.L)
		if err != nil {
			t.Fatal(err)
		}
		got := s.OutShape(tt.C)
		if got[0] != tt.want[0] || got[1] != tt.want[1] || got[2] != tt.want[2] {
			t.Errorf("%d×%d J=%d L=%d C=%d: shape %v, want %v", tt.h, tt.w, tt.J, tt.L, tt.C, got, tt.want)
		}
		src := make([]float32, tt.C*tt.h*tt.w)
		for i := range src {
			src[i] = float32(i%7) / 7
		}
		dst := make([]float32, got[0]*got[1]*got[2])
		s.Apply(dst, src, tt.C, s.NewWorkspace())
		for i, v := range dst {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("output %d is %v", i, v)
			}
		}
	}
	for _, bad := range [][4]int{{28, 28, 0, 8}, {28, 28, 2, 0}, {3, 28, 2, 8}} {
		if _, err := New(bad[0], bad[1], bad[2], bad[3]); err == nil {
			t.Errorf("New%v accepted", bad)
		}
	}
}

// TestConstantImage: a Morlet wavelet has zero mean, so a constant image has zero order-1 and
// order-2 coefficients, and its order-0 (φ-averaged) coefficients equal the constant times
// φ̂(0) = π/3.1415.
func TestConstantImage(t *testing.T) {
	s, _ := New(28, 28, 2, 8)
	src := make([]float32, 28*28)
	for i := range src {
		src[i] = 0.75
	}
	dst := make([]float32, 81*49)
	s.Apply(dst, src, 1, s.NewWorkspace())
	want := 0.75 * math.Pi / kymatioPi
	for i := range 49 {
		if math.Abs(float64(dst[i])-want) > 1e-6 {
			t.Fatalf("order 0 at %d: %v, want %v", i, dst[i], want)
		}
	}
	for i := 49; i < len(dst); i++ {
		if math.Abs(float64(dst[i])) > 1e-5 {
			t.Fatalf("channel %d: %v, want 0", i/49, dst[i])
		}
	}
}

// TestAgainstDirect recomputes order 0 and the j1 = 0 order-1 channels in the spatial domain:
// reflect-pad, circular convolution with the filters' spatial kernels, modulus, convolution with
// φ, sampling every 2^J pixels inside the image.
func TestAgainstDirect(t *testing.T) {
	const h, J, L = 28, 2, 8
	s, _ := New(h, h, J, L)
	n := s.n
	img := smoothImage(h, h, 0)
	dst := make([]float32, 81*49)
	s.Apply(dst, img, 1, s.NewWorkspace())

	pad := make([]complex128, n*n)
	for r := range n {
		for c := range n {
			pad[r*n+c] = complex(float64(img[reflect(r-s.top, h)*h+reflect(c-s.left, h)]), 0)
		}
	}
	spatial := func(f []float64) []complex128 {
		x := make([]complex128, len(f))
		for i, v := range f {
			x[i] = complex(v, 0)
		}
		newFFT2(n).inverse(x)
		return x
	}
	conv := func(x, k []complex128) []complex128 { return circConv(x, k, n) }
	phi := spatial(s.bank.phi[0])
	check := func(ch int, y []complex128) {
		for r := range 7 {
			for c := range 7 {
				want := real(y[(r+1)*4*n+(c+1)*4])
				got := float64(dst[ch*49+r*7+c])
				if math.Abs(got-want) > 1e-5*(1+math.Abs(want)) {
					t.Fatalf("channel %d at (%d,%d): %v, direct %v", ch, r, c, got, want)
				}
			}
		}
	}
	check(0, conv(pad, phi))
	for _, l := range []int{0, 3, 6} {
		u := conv(pad, spatial(s.bank.psi[0][l][0]))
		for i := range u {
			u[i] = complex(cmplx.Abs(u[i]), 0)
		}
		check(1+l, conv(u, phi))
	}
}

// TestTranslationInvariance: the φ averaging at scale 2^J makes the coefficients stable to
// translations small against 2^J, so a one-pixel shift changes the output less than it changes
// the pixels, and less at J = 3 than at J = 2.
func TestTranslationInvariance(t *testing.T) {
	rel := func(x, y []float32) float64 {
		var d, nx float64
		for i := range x {
			d += float64(x[i]-y[i]) * float64(x[i]-y[i])
			nx += float64(x[i]) * float64(x[i])
		}
		return math.Sqrt(d / nx)
	}
	a, b := smoothImage(32, 32, 0), smoothImage(32, 32, 1)
	prev := rel(a, b)
	t.Logf("relative change for a 1-pixel shift: pixels %.4f", prev)
	for _, J := range []int{2, 3} {
		s, _ := New(32, 32, J, 8)
		sh := s.OutShape(1)
		sa, sb := make([]float32, sh[0]*sh[1]*sh[2]), make([]float32, sh[0]*sh[1]*sh[2])
		ws := s.NewWorkspace()
		s.Apply(sa, a, 1, ws)
		s.Apply(sb, b, 1, ws)
		r := rel(sa, sb)
		t.Logf("J = %d: %.4f", J, r)
		if r >= prev {
			t.Errorf("J = %d: relative change %v, not below %v", J, r, prev)
		}
		prev = r
	}
}

// TestNonNegative: orders 1 and 2 are moduli averaged by a positive Gaussian.
func TestNonNegative(t *testing.T) {
	s, _ := New(28, 28, 2, 8)
	dst := make([]float32, 81*49)
	s.Apply(dst, smoothImage(28, 28, 3), 1, s.NewWorkspace())
	for i := 49; i < len(dst); i++ {
		if dst[i] < -1e-6 {
			t.Fatalf("channel %d: %v < 0", i/49, dst[i])
		}
	}
}

func TestGroupNorm(t *testing.T) {
	x := make([]float32, 81*49)
	for i := range x {
		x[i] = float32(i%13) * float32(1+i/490)
	}
	groupNorm(x, 27)
	size := len(x) / 27
	for g := range 27 {
		var m, v float64
		for _, y := range x[g*size : (g+1)*size] {
			m += float64(y)
		}
		m /= float64(size)
		for _, y := range x[g*size : (g+1)*size] {
			v += (float64(y) - m) * (float64(y) - m)
		}
		v /= float64(size)
		if math.Abs(m) > 1e-5 || math.Abs(v-1) > 1e-3 {
			t.Errorf("group %d: mean %v variance %v", g, m, v)
		}
	}
}

func BenchmarkApply28(b *testing.B) {
	s, _ := New(28, 28, 2, 8)
	ws := s.NewWorkspace()
	src, dst := smoothImage(28, 28, 0), make([]float32, 81*49)
	b.ResetTimer()
	for range b.N {
		s.Apply(dst, src, 1, ws)
	}
}
