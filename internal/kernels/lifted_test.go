package kernels_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dptrain/dptrain/internal/kernels"
	_ "github.com/dptrain/dptrain/models" // with -tags openblas: route blas32 and blas64 to OpenBLAS
)

// slotTestSlots are the target's positions in a batch: both sides of OpenBLAS's 6-, 12- and
// 32-row kernel boundaries.
var slotTestSlots = []int{0, 1, 5, 6, 11, 12, 17, 31, 32}

// randRows returns n rows of k values, normal times s.
func randRows(rng *rand.Rand, n, k int, s float64) []float32 {
	v := make([]float32, n*k)
	for i := range v {
		v[i] = float32(s * rng.NormFloat64())
	}
	return v
}

// perExample is what BlockPerExample computes for one example.
type perExample struct {
	g     []float32
	sq    float64
	scale float32
}

func blockPerExample(t *testing.T, w, in, tg []float32, n, nIn, nOut int, clip float64) []perExample {
	t.Helper()
	g, sq, scale := make([]float32, n*nOut), make([]float64, n), make([]float32, n)
	if _, _, err := kernels.BlockPerExample(g, sq, scale, w, in, tg, n, nIn, nOut, clip, nil); err != nil {
		t.Fatal(err)
	}
	out := make([]perExample, n)
	for i := range out {
		out[i] = perExample{g[i*nOut : (i+1)*nOut], sq[i], scale[i]}
	}
	return out
}

// samePerExample returns "" when a and b are bit-identical, else the first difference.
func samePerExample(a, b perExample) string {
	for j := range a.g {
		if math.Float32bits(a.g[j]) != math.Float32bits(b.g[j]) {
			return fmt.Sprintf("residual entry %d: %v against %v (%d ulp)", j, a.g[j], b.g[j], int64(math.Float32bits(a.g[j]))-int64(math.Float32bits(b.g[j])))
		}
	}
	if math.Float64bits(a.sq) != math.Float64bits(b.sq) {
		return fmt.Sprintf("squared norm %v against %v", a.sq, b.sq)
	}
	if math.Float32bits(a.scale) != math.Float32bits(b.scale) {
		return fmt.Sprintf("clip factor %v against %v", a.scale, b.scale)
	}
	return ""
}

// withoutRow returns rows (n×k) without row i.
func withoutRow(rows []float32, k, i int) []float32 {
	return append(slices.Clone(rows[:i*k]), rows[(i+1)*k:]...)
}

// TestBlockPerExampleSlotInvariant: an example's residual row x_iW − t_i, the squared norm of
// its block gradient and its clip factor are bit-identical whatever its slot in the batch,
// the batch's size and its neighbours: the same as the example alone (a batch of one) and as
// in the batch without the example before it (its slot one lower), at the block shapes of
// the lifted MLPs of configs/ (784-256-10, Madelon's 20-200-200-200-5).
func TestBlockPerExampleSlotInvariant(t *testing.T) {
	for _, tc := range []struct{ nIn, nOut, n int }{
		{784, 256, 45}, {256, 10, 67}, {20, 200, 40}, {200, 200, 67}, {200, 5, 67},
	} {
		t.Run(fmt.Sprintf("%dx%d-b%d", tc.nIn, tc.nOut, tc.n), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.nIn), uint64(tc.n)))
			w := randRows(rng, tc.nIn, tc.nOut, 1/math.Sqrt(float64(tc.nIn)))
			x, tg := randRows(rng, 1, tc.nIn, 1), randRows(rng, 1, tc.nOut, 1)
			const clip = 0.5 // the target's gradient is clipped: its factor depends on every bit of its norm
			alone := blockPerExample(t, w, x, tg, 1, tc.nIn, tc.nOut, clip)[0]
			if alone.scale >= 1 {
				t.Fatalf("the target is not clipped (squared norm %v)", alone.sq)
			}
			for _, slot := range append(slotTestSlots, tc.n-1) {
				if slot >= tc.n {
					continue
				}
				in, tgt := randRows(rng, tc.n, tc.nIn, 1), randRows(rng, tc.n, tc.nOut, 1)
				copy(in[slot*tc.nIn:], x)
				copy(tgt[slot*tc.nOut:], tg)
				got := blockPerExample(t, w, in, tgt, tc.n, tc.nIn, tc.nOut, clip)[slot]
				if d := samePerExample(got, alone); d != "" {
					t.Errorf("slot %d of %d against alone: %s", slot, tc.n, d)
				}
				other := slot - 1 // the neighbouring batch: the example before the target removed
				if slot == 0 {
					other = 1
				}
				nb := blockPerExample(t, w, withoutRow(in, tc.nIn, other), withoutRow(tgt, tc.nOut, other), tc.n-1, tc.nIn, tc.nOut, clip)
				if d := samePerExample(got, nb[min(slot, other)]); d != "" {
					t.Errorf("slot %d of %d against slot %d of %d (example %d removed): %s", slot, tc.n, min(slot, other), tc.n-1, other, d)
				}
			}
		})
	}
}

// TestClippedBlockGradientRemoveOne: removing one example, crafted to be clipped, from a batch
// moves ClippedBlockGradient's sum by at most C in l2 norm (up to a relative 1e-6 and one
// float32 rounding of each released sum), at every slot of the example.
func TestClippedBlockGradientRemoveOne(t *testing.T) {
	for _, tc := range []struct{ nIn, nOut, n int }{{784, 256, 45}, {256, 10, 67}, {200, 200, 67}, {200, 5, 67}} {
		t.Run(fmt.Sprintf("%dx%d-b%d", tc.nIn, tc.nOut, tc.n), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.nOut), uint64(tc.n)))
			w := randRows(rng, tc.nIn, tc.nOut, 1/math.Sqrt(float64(tc.nIn)))
			const clip = 1.0
			worst := 0.0
			for _, slot := range append(slotTestSlots, tc.n-1) {
				if slot >= tc.n {
					continue
				}
				// The others are a mix of clipped and unclipped examples; the target is 10³ times
				// larger.
				in, tgt := randRows(rng, tc.n, tc.nIn, 0.3), randRows(rng, tc.n, tc.nOut, 0.3)
				for j := range tc.nIn {
					in[slot*tc.nIn+j] *= 1000
				}
				for j := range tc.nOut {
					tgt[slot*tc.nOut+j] *= 1000
				}
				sd, sn := make([]float32, tc.nIn*tc.nOut), make([]float32, tc.nIn*tc.nOut)
				st, _, err := kernels.ClippedBlockGradient(sd, w, in, tgt, tc.n, tc.nIn, tc.nOut, clip, nil)
				if err != nil {
					t.Fatal(err)
				}
				if st.Clipped == 0 {
					t.Fatal("no example clipped")
				}
				if _, _, err := kernels.ClippedBlockGradient(sn, w, withoutRow(in, tc.nIn, slot), withoutRow(tgt, tc.nOut, slot), tc.n-1, tc.nIn, tc.nOut, clip, nil); err != nil {
					t.Fatal(err)
				}
				var d2, a2 float64
				for j := range sd {
					d := float64(sd[j]) - float64(sn[j])
					d2 += d * d
					a := ulp(sd[j]) + ulp(sn[j])
					a2 += a * a
				}
				delta := math.Sqrt(d2)
				worst = max(worst, delta/clip)
				if delta > clip*(1+1e-6)+math.Sqrt(a2) {
					t.Errorf("slot %d of %d: removing the target moved the sum by %v > C = %v (rounding allowance %.3g)", slot, tc.n, delta, clip, math.Sqrt(a2))
				}
			}
			t.Logf("worst ‖ΔS‖/C = %.9f", worst)
		})
	}
}

// ulp is the spacing of float32 values at x.
func ulp(x float32) float64 {
	a := float32(math.Abs(float64(x)))
	return float64(math.Nextafter32(a, float32(math.Inf(1))) - a)
}
