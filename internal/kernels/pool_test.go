package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The max-pooling passes against their scalar loops, bit for bit (values, keys and indices),
// on ties, signed zeros, infinities and NaNs of either sign, with and without a tail.
func TestMaxPoolPassesMatchScalar(t *testing.T) {
	if !haveVecAVX2 {
		t.Skip("the pooling vector kernels need amd64 with AVX2: this CPU runs the scalar loops only")
	}
	rng := rand.New(rand.NewPCG(9, 10))
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), math.Float32frombits(0xffc00001), math.Float32frombits(0x7f800001), 1e-42}
	gen := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			if rng.IntN(3) == 0 {
				v[i] = special[rng.IntN(len(special))]
			} else {
				v[i] = float32(rng.IntN(5) - 2) // ties
			}
		}
		return v
	}
	for _, n := range []int{1, 8, 13, 64, 1000} {
		a, b := gen(n), gen(n)
		m, w := make([]float32, n), make([]float32, n)
		k, wk, i, wi := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
		const base, c = 1234, 16
		MaxPairs(a, b, m, k, i, n, base, c)
		for j := range a {
			ka, kb := OrderedKey(a[j]), OrderedKey(b[j])
			right := int32(uint64(int64(ka)-int64(kb))>>63) * c
			w[j], wk[j], wi[j] = max(a[j], b[j]), max(ka, kb), base+int32(j)+right
		}
		for j := range w {
			if math.Float32bits(m[j]) != math.Float32bits(w[j]) || k[j] != wk[j] || i[j] != wi[j] {
				t.Fatalf("MaxPairs(%#x, %#x) at %d: (%#x, %d, %d), scalar (%#x, %d, %d)", math.Float32bits(a[j]), math.Float32bits(b[j]), j,
					math.Float32bits(m[j]), k[j], i[j], math.Float32bits(w[j]), wk[j], wi[j])
			}
		}
		pk, ck, pi, ci := make([]int32, n), make([]int32, n), make([]int32, n), make([]int32, n)
		for j := range pk {
			pk[j], ck[j] = OrderedKey(a[j]), OrderedKey(b[j])
			pi[j], ci[j] = int32(rng.IntN(1000)), int32(rng.IntN(1000))
		}
		y, wy := make([]float32, n), make([]float32, n)
		arg, warg := make([]int32, n), make([]int32, n)
		MaxRows(y, arg, a, b, pk, ck, pi, ci)
		for j := range wy {
			sel := int32(uint64(int64(pk[j])-int64(ck[j])) >> 63)
			wy[j], warg[j] = max(a[j], b[j]), pi[j]+(ci[j]-pi[j])*sel
		}
		for j := range wy {
			if math.Float32bits(y[j]) != math.Float32bits(wy[j]) || arg[j] != warg[j] {
				t.Fatalf("MaxRows at %d: (%#x, %d), scalar (%#x, %d)", j, math.Float32bits(y[j]), arg[j], math.Float32bits(wy[j]), warg[j])
			}
		}
	}
}
