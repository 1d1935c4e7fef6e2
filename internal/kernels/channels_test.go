package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The per-channel kernels against their scalar loops, bit for bit: channel counts that are,
// are not and are below multiples of 16, one row and many, accumulators that start non-zero,
// and values from tiny to huge with infinities, so that any reordering, fusing or rounding
// difference between the vector lanes and the scalar code shows.
func TestChannelKernelsMatchScalar(t *testing.T) {
	if !haveChanAVX {
		t.Skip("the per-channel vector kernels need amd64 with AVX: this CPU runs the scalar loops only")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	val := func(i int) float32 {
		switch i % 97 {
		case 13:
			return float32(math.Inf(1))
		case 29:
			return 1e-40 // subnormal
		case 31:
			return -3e38
		}
		return float32(rng.NormFloat64() * math.Exp(4*rng.NormFloat64()))
	}
	f32 := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = val(i)
		}
		return v
	}
	f64 := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64(val(i)) * 0.5
		}
		return v
	}
	same32 := func(name string, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
				t.Fatalf("%s: element %d: vector %g, scalar %g", name, i, got[i], want[i])
			}
		}
	}
	same64 := func(name string, got, want []float64) {
		t.Helper()
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
				t.Fatalf("%s: element %d: vector %g, scalar %g", name, i, got[i], want[i])
			}
		}
	}
	for _, sh := range []struct{ rows, c int }{{1, 16}, {3, 16}, {7, 20}, {64, 32}, {5, 48}, {1024, 16}, {256, 64}, {9, 5}, {2, 33}} {
		n := sh.rows * sh.c
		x, dy := f32(n), f32(n)
		mean, inv, acc := f64(sh.c), f64(sh.c), f64(sh.c)
		gamma, beta, a, b, d := f32(sh.c), f32(sh.c), f32(sh.c), f32(sh.c), f32(sh.c)

		g, w := append([]float64(nil), acc...), append([]float64(nil), acc...)
		ChanSum(x, sh.rows, sh.c, g)
		chanSumGo(x, sh.rows, sh.c, 0, w)
		same64("ChanSum", g, w)

		g, w = append([]float64(nil), acc...), append([]float64(nil), acc...)
		ChanSqDev(x, sh.rows, sh.c, mean, g)
		chanSqDevGo(x, sh.rows, sh.c, 0, mean, w)
		same64("ChanSqDev", g, w)

		gh, gy, wh, wy := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
		ChanNormalize(x, gh, gy, sh.rows, sh.c, mean, inv, gamma, beta)
		chanNormGo(x, wh, wy, sh.rows, sh.c, 0, mean, inv, gamma, beta)
		same32("ChanNormalize x̂", gh, wh)
		same32("ChanNormalize y", gy, wy)

		gs, gb := append([]float64(nil), acc...), append([]float64(nil), mean...)
		ws, wb := append([]float64(nil), acc...), append([]float64(nil), mean...)
		ChanDots(x, dy, sh.rows, sh.c, gs, gb)
		chanDotsGo(x, dy, sh.rows, sh.c, 0, ws, wb)
		same64("ChanDots Σ x̂·dy", gs, ws)
		same64("ChanDots Σ dy", gb, wb)

		for _, add := range []bool{false, true} {
			gx, wx := f32(n), make([]float32, n)
			copy(wx, gx)
			ChanAffineDiff(x, dy, gx, sh.rows, sh.c, a, b, d, add)
			chanDxGo(x, dy, wx, sh.rows, sh.c, 0, a, b, d, add)
			same32("ChanAffineDiff", gx, wx)
		}
	}
}

// Each kernel leaves the channels and rows outside its tensor alone.
func TestChannelKernelsStayInBounds(t *testing.T) {
	const rows, c = 5, 32
	x := make([]float32, rows*c+8)
	for i := range x {
		x[i] = float32(i)
	}
	acc := make([]float64, c+4)
	for i := range acc[c:] {
		acc[c+i] = -7
	}
	ChanSum(x[:rows*c], rows, c, acc[:c])
	for i, v := range acc[c:] {
		if v != -7 {
			t.Fatalf("ChanSum wrote acc[%d] = %g beyond its %d channels", c+i, v, c)
		}
	}
	out := make([]float32, rows*c+8)
	for i := range out {
		out[i] = -1
	}
	ones := make([]float32, c)
	for i := range ones {
		ones[i] = 1
	}
	ChanAffineDiff(x[:rows*c], x[:rows*c], out[:rows*c], rows, c, ones, ones, ones, false)
	for i, v := range out[rows*c:] {
		if v != -1 {
			t.Fatalf("ChanAffineDiff wrote element %d beyond its tensor", rows*c+i)
		}
	}
}
