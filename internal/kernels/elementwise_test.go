package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The element-wise kernels against their scalar loops, bit for bit, on lengths with and without
// a tail and on ±0, subnormals, infinities and NaNs of either sign (the sums' NaN payloads
// excepted).
func TestElementwiseMatchesScalar(t *testing.T) {
	if !haveVecAVX2 {
		t.Skip("the element-wise vector kernels need amd64 with AVX2: this CPU runs the scalar loops only")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	special := []float32{0, float32(math.Copysign(0, -1)), 1e-42, -1e-42, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.Float32frombits(0xffc00001), 3e38, -3e38}
	gen := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			if i%5 == 0 {
				v[i] = special[rng.IntN(len(special))]
			} else {
				v[i] = float32(rng.NormFloat64() * math.Exp(5*rng.NormFloat64()))
			}
		}
		return v
	}
	// ReLU and its derivative are defined bit-wise (NaNs included); a sum of two NaNs is a NaN
	// whose payload the Go compiler leaves to operand order, which it may swap.
	same := func(name string, got, want []float32) {
		t.Helper()
		anyNaN := name != "ReLU" && name != "ReLUGrad"
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(anyNaN && got[i] != got[i] && want[i] != want[i]) {
				t.Fatalf("%s: element %d: vector %#x, scalar %#x", name, i, math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
	}
	for _, n := range []int{1, 7, 8, 9, 64, 1000, 4099} {
		x, dy, a, b := gen(n), gen(n), gen(n), gen(n)

		got, want := make([]float32, n), make([]float32, n)
		ReLU(x, got)
		for i, v := range x {
			want[i] = max(v, 0)
		}
		same("ReLU", got, want)

		ReLUGrad(x, dy, got)
		for i, v := range x {
			keep := uint32(int32(^math.Float32bits(v)) >> 31)
			want[i] = math.Float32frombits(math.Float32bits(dy[i]) & keep)
		}
		same("ReLUGrad", got, want)

		copy(got, a)
		copy(want, a)
		Add(got, b)
		for i, v := range b {
			want[i] += v
		}
		same("Add", got, want)

		Add2(got, a, b)
		for i := range a {
			want[i] = a[i] + b[i]
		}
		same("Add2", got, want)

		s, w := make([]float64, n), make([]float64, n)
		for i := range s {
			s[i] = rng.NormFloat64()
			w[i] = s[i]
		}
		c := float32(rng.Float64())
		AddScaled64(s, c, a)
		for i, v := range a {
			w[i] += float64(c * v)
		}
		for i := range w {
			if math.Float64bits(s[i]) != math.Float64bits(w[i]) && !(s[i] != s[i] && w[i] != w[i]) {
				t.Fatalf("AddScaled64: element %d: vector %g, scalar %g", i, s[i], w[i])
			}
		}
	}
}
