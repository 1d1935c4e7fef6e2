package lifted

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/kernels"
)

// slotTestSlots are the target's positions in a batch: both sides of OpenBLAS's 6-, 12- and
// 32-row kernel boundaries (the last slot is added per batch).
var slotTestSlots = []int{0, 1, 5, 6, 11, 12, 17, 31, 32}

// slotNet is a lifted MLP's weights and a pool of examples for the slot tests.
type slotNet struct {
	sizes []int
	rho   []float64
	w     [][]float32
	x     []float32 // pool×n_0
	y     []int32
	pool  int
}

func newSlotNet(sizes []int, rho float64, pool int, seed uint64) *slotNet {
	rng := rand.New(rand.NewPCG(seed, 7))
	s := &slotNet{sizes: sizes, pool: pool, x: make([]float32, pool*sizes[0]), y: make([]int32, pool)}
	for range len(sizes) - 1 {
		s.rho = append(s.rho, rho)
	}
	for d := 0; d+1 < len(sizes); d++ {
		w := make([]float32, sizes[d]*sizes[d+1])
		for i := range w {
			w[i] = float32(rng.NormFloat64() / math.Sqrt(float64(sizes[d])))
		}
		s.w = append(s.w, w)
	}
	classes := sizes[len(sizes)-1]
	for i := range pool {
		s.y[i] = int32(rng.IntN(classes))
		for j := range sizes[0] {
			s.x[i*sizes[0]+j] = float32(rng.Float64()) // [0, 1) pixels, then clipped to ρ_0
		}
	}
	return s
}

// batch returns the examples of the pool with dataset indices idx, in that order.
func (s *slotNet) batch(idx []int) data.Batch {
	n0 := s.sizes[0]
	b := data.Batch{N: len(idx), X: make([]float32, len(idx)*n0), Y: make([]int32, len(idx)), Index: append([]int(nil), idx...)}
	for k, i := range idx {
		copy(b.X[k*n0:(k+1)*n0], s.x[i*n0:(i+1)*n0])
		b.Y[k] = s.y[i]
	}
	return b
}

// slotView is what one example gets from two visits of its batch: its kept auxiliaries after
// each and, per block, its rows of the sub-problem and what the block gradient computes for
// it.
type slotView struct {
	aux [2][]float32
	in  [2][][]float32
	tg  [2][][]float32
	per [2][]perExample
}

type perExample struct {
	g     []float32
	sq    float64
	scale float32
}

// view visits batch idx twice with a fresh model (the first visit takes the forward pass, the
// second the kept auxiliaries) and returns the example at position k.
func (s *slotNet) view(t *testing.T, idx []int, k int, clip float64) slotView {
	t.Helper()
	m, err := New(Config{Sizes: s.sizes, ActivationClip: s.rho, DatasetSize: s.pool})
	if err != nil {
		t.Fatal(err)
	}
	b := s.batch(idx)
	var v slotView
	for visit := range 2 {
		p, err := m.Update(s.w, b)
		if err != nil {
			t.Fatal(err)
		}
		aux, _ := m.State()
		v.aux[visit] = append([]float32(nil), aux[idx[k]*m.per:(idx[k]+1)*m.per]...)
		for d := range s.w {
			in, out := m.Shape(d)
			v.in[visit] = append(v.in[visit], p.In[d][k*in:(k+1)*in])
			v.tg[visit] = append(v.tg[visit], p.Target[d][k*out:(k+1)*out])
			g, sq, scale := make([]float32, p.N*out), make([]float64, p.N), make([]float32, p.N)
			if _, _, err := kernels.BlockPerExample(g, sq, scale, s.w[d], p.In[d], p.Target[d], p.N, in, out, clip, nil); err != nil {
				t.Fatal(err)
			}
			v.per[visit] = append(v.per[visit], perExample{g[k*out : (k+1)*out], sq[k], scale[k]})
		}
	}
	return v
}

// diff32 returns "" when a and b are bit-identical, else their first difference and how many
// entries differ.
func diff32(what string, a, b []float32) string {
	first, count := -1, 0
	for j := range a {
		if math.Float32bits(a[j]) != math.Float32bits(b[j]) {
			if first < 0 {
				first = j
			}
			count++
		}
	}
	if count == 0 {
		return ""
	}
	return fmt.Sprintf("%s entry %d: %v against %v (%d of %d entries differ)", what, first, a[first], b[first], count, len(a))
}

// same returns "" when a and b are bit-identical, else their first difference.
func (a slotView) same(b slotView) string {
	for visit := range 2 {
		if d := diff32("auxiliaries", a.aux[visit], b.aux[visit]); d != "" {
			return fmt.Sprintf("visit %d: %s", visit+1, d)
		}
		for d := range a.in[visit] {
			pa, pb := a.per[visit][d], b.per[visit][d]
			for _, c := range []struct {
				what string
				x, y []float32
			}{{"input x", a.in[visit][d], b.in[visit][d]}, {"target", a.tg[visit][d], b.tg[visit][d]}, {"residual", pa.g, pb.g}} {
				if s := diff32(c.what, c.x, c.y); s != "" {
					return fmt.Sprintf("visit %d block %d: %s", visit+1, d, s)
				}
			}
			if math.Float64bits(pa.sq) != math.Float64bits(pb.sq) {
				return fmt.Sprintf("visit %d block %d: squared norm %v against %v", visit+1, d, pa.sq, pb.sq)
			}
			if math.Float32bits(pa.scale) != math.Float32bits(pb.scale) {
				return fmt.Sprintf("visit %d block %d: clip factor %v against %v", visit+1, d, pa.scale, pb.scale)
			}
		}
	}
	return ""
}

// TestUpdateSlotInvariant: what DP-MBCD computes for one example — its kept auxiliaries u_d
// and x_d after each of two visits (the forward pass, Eq. 11's x-update with its clip, Eq.
// 10's u-update), its rows of the released blocks' sub-problems, its block residuals
// x_dW_d − t_d, their squared norms and clip factors — is bit-identical whatever its slot in
// the batch and the batch around it: the same as the example alone and as in the batch
// without the example before it, for the lifted MLPs of configs/ (Madelon's 20-200-200-200-5
// at ρ = 1) and a 784-256-10 one.
func TestUpdateSlotInvariant(t *testing.T) {
	for _, tc := range []struct {
		sizes []int
		n     int
	}{{[]int{784, 256, 10}, 45}, {[]int{784, 256, 10}, 67}, {[]int{20, 200, 200, 200, 5}, 40}, {[]int{20, 200, 200, 200, 5}, 67}} {
		t.Run(fmt.Sprintf("%v-b%d", tc.sizes, tc.n), func(t *testing.T) {
			s := newSlotNet(tc.sizes, 1, tc.n+1, uint64(tc.n))
			const target, clip = 0, 1e-3 // every block gradient clipped: its factor carries its norm's bits
			alone := s.view(t, []int{target}, 0, clip)
			for _, slot := range append(slotTestSlots, tc.n-1) {
				if slot >= tc.n {
					continue
				}
				idx := make([]int, 0, tc.n) // the other examples in a slot-dependent order
				for k := range tc.n {
					idx = append(idx, 1+(k*7+slot)%tc.n)
				}
				idx[slot] = target
				got := s.view(t, idx, slot, clip)
				if d := got.same(alone); d != "" {
					t.Errorf("slot %d of %d against alone: %s", slot, tc.n, d)
				}
				other := slot - 1 // the neighbouring batch: the example before the target removed
				if slot == 0 {
					other = 1
				}
				nb := append(append([]int(nil), idx[:other]...), idx[other+1:]...)
				if d := got.same(s.view(t, nb, min(slot, other), clip)); d != "" {
					t.Errorf("slot %d of %d against slot %d of %d (example at %d removed): %s", slot, tc.n, min(slot, other), tc.n-1, other, d)
				}
			}
		})
	}
}

// TestUpdateRemoveOneMovesSumByC: the clipped block-gradient sums of a batch after the hidden
// updates move by at most C (up to a relative 1e-6 and one float32 rounding of each sum) when
// one example, crafted to be clipped, is removed, at every slot.
func TestUpdateRemoveOneMovesSumByC(t *testing.T) {
	for _, tc := range []struct {
		sizes []int
		n     int
	}{{[]int{784, 256, 10}, 67}, {[]int{20, 200, 200, 200, 5}, 67}} {
		t.Run(fmt.Sprintf("%v-b%d", tc.sizes, tc.n), func(t *testing.T) {
			s := newSlotNet(tc.sizes, 1, tc.n+1, uint64(tc.n)+1)
			const target, clip = 0, 0.05
			worst := 0.0
			for _, slot := range append(slotTestSlots, tc.n-1) {
				if slot >= tc.n {
					continue
				}
				idx := make([]int, 0, tc.n)
				for k := range tc.n {
					idx = append(idx, 1+(k*7+slot)%tc.n)
				}
				idx[slot] = target
				without := append(append([]int(nil), idx[:slot]...), idx[slot+1:]...)
				sums := func(idx []int) ([][]float32, int) {
					m, err := New(Config{Sizes: s.sizes, ActivationClip: s.rho, DatasetSize: s.pool})
					if err != nil {
						t.Fatal(err)
					}
					p, err := m.Update(s.w, s.batch(idx))
					if err != nil {
						t.Fatal(err)
					}
					var out [][]float32
					clipped := 0
					for d := range s.w {
						in, o := m.Shape(d)
						gw := make([]float32, in*o)
						st, _, err := kernels.ClippedBlockGradient(gw, s.w[d], p.In[d], p.Target[d], p.N, in, o, clip, nil)
						if err != nil {
							t.Fatal(err)
						}
						clipped += st.Clipped
						out = append(out, gw)
					}
					return out, clipped
				}
				sd, clipped := sums(idx)
				sn, clippedN := sums(without)
				if clipped == clippedN {
					t.Fatalf("slot %d: the target is not clipped in any block", slot)
				}
				for d := range sd {
					var d2, a2 float64
					for j := range sd[d] {
						v := float64(sd[d][j]) - float64(sn[d][j])
						d2 += v * v
						a := ulp(sd[d][j]) + ulp(sn[d][j])
						a2 += a * a
					}
					delta := math.Sqrt(d2)
					worst = max(worst, delta/clip)
					if delta > clip*(1+1e-6)+math.Sqrt(a2) {
						t.Errorf("slot %d block %d: removing the target moved the sum by %v > C = %v (rounding allowance %.3g)", slot, d, delta, clip, math.Sqrt(a2))
					}
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
