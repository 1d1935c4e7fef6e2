package nmf

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/dptrain/dptrain/internal/kernels"
	"github.com/dptrain/dptrain/optim"
)

// rowView is what one row of M gets from a Y step: its hidden row of X after the step and,
// from the rows that entered the clipped sum, its residual x_iY − m_i, the squared norm of its
// gradient and its clip factor.
type rowView struct {
	x, g  []float32
	sq    float64
	scale float32
}

// stepView takes one Y step of a fresh model on rows and returns row k's view.
func stepView(t *testing.T, cfg Config, m []float32, n, c int, rows []int, k int) rowView {
	t.Helper()
	md := newModel(t, cfg, m, n, c, 3)
	r, b := cfg.Rank, len(rows)
	y0 := slices.Clone(md.Y())
	x0 := slices.Clone(md.X())
	if _, err := md.Step(rows, 0, optim.NewSeededNoise(1)); err != nil {
		t.Fatal(err)
	}
	src := md.X() // the rows the clipped sum saw: after the inner steps, or before the joint step
	if cfg.Joint {
		src = x0
	}
	xb, mb := make([]float32, 0, b*r), make([]float32, 0, b*c)
	for _, i := range rows {
		xb, mb = append(xb, src[i*r:(i+1)*r]...), append(mb, m[i*c:(i+1)*c]...)
	}
	g, sq, scale := make([]float32, b*c), make([]float64, b), make([]float32, b)
	if _, _, err := kernels.BlockPerExample(g, sq, scale, y0, xb, mb, b, r, c, cfg.Clip, nil); err != nil {
		t.Fatal(err)
	}
	i := rows[k]
	return rowView{slices.Clone(md.X()[i*r : (i+1)*r]), g[k*c : (k+1)*c], sq[k], scale[k]}
}

func (a rowView) same(b rowView) string {
	for _, c := range []struct {
		what string
		x, y []float32
	}{{"hidden row", a.x, b.x}, {"residual", a.g, b.g}} {
		for j := range c.x {
			if math.Float32bits(c.x[j]) != math.Float32bits(c.y[j]) {
				return fmt.Sprintf("%s entry %d: %v against %v", c.what, j, c.x[j], c.y[j])
			}
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

// TestStepSlotInvariant: a row of M's hidden row of X after a Y step, and its residual,
// squared gradient norm and clip factor in the step's clipped sum, are bit-identical whatever
// its slot in the batch and the rows around it: the same as the row alone and as in the batch
// without the row before it, at the sizes of Chen & Liu's Appendix D.1.1 (200 columns, rank
// 10), in the alternating, joint and recompute modes.
func TestStepSlotInvariant(t *testing.T) {
	const n, c, r = 70, 200, 10
	m := lowRank(t, n, c, r)
	for _, mode := range []struct {
		name string
		edit func(*Config)
	}{{"alternating", func(*Config) {}}, {"joint", func(c *Config) { c.Joint, c.InnerSteps = true, 1 }}, {"recompute", func(c *Config) { c.Recompute = true }}} {
		for _, b := range []int{40, 67} {
			t.Run(fmt.Sprintf("%s-b%d", mode.name, b), func(t *testing.T) {
				cfg := Config{Rank: r, Eta: 1, Kappa: 1.1, RowNorm: 3, Clip: 1e-3, NoiseMultiplier: 1, InnerSteps: 5}
				mode.edit(&cfg)
				const target = 0
				alone := stepView(t, cfg, m, n, c, []int{target}, 0)
				if alone.scale >= 1 {
					t.Fatal("the target's gradient is not clipped")
				}
				for _, slot := range []int{0, 1, 5, 6, 11, 12, 17, 31, 32, b - 1} {
					rows := make([]int, 0, b)
					for k := range b {
						rows = append(rows, 1+(k*5+slot)%(n-1))
					}
					rows[slot] = target
					got := stepView(t, cfg, m, n, c, rows, slot)
					if d := got.same(alone); d != "" {
						t.Errorf("slot %d of %d against alone: %s", slot, b, d)
					}
					other := slot - 1
					if slot == 0 {
						other = 1
					}
					nb := append(slices.Clone(rows[:other]), rows[other+1:]...)
					if d := got.same(stepView(t, cfg, m, n, c, nb, min(slot, other))); d != "" {
						t.Errorf("slot %d of %d against slot %d of %d (row at %d removed): %s", slot, b, min(slot, other), b-1, other, d)
					}
				}
			})
		}
	}
}
