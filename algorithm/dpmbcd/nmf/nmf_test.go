package nmf

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// lowRank returns a small synthetic matrix from package data.
func lowRank(t *testing.T, n, c, r int) []float32 {
	t.Helper()
	ds, _, err := data.NewLowRank(data.LowRankConfig{Rows: n, Cols: c, Rank: r, Noise: 0.01, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	return ds.Train.X
}

func testConfig() Config {
	return Config{Rank: 3, Eta: 1, Kappa: 1.1, RowNorm: 1.5, Clip: 0.5, NoiseMultiplier: 1, InnerSteps: 3}
}

func newModel(t *testing.T, cfg Config, m []float32, n, c int, seed uint64) *Model {
	t.Helper()
	md, err := New(cfg, m, n, c, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// TestClippedSumDecomposes: the clipped sum of a batch equals the float64 sum of the
// materialised per-example gradients x_iᵀ(x_iY − m_i), each scaled to norm ≤ C, with one
// crafted row (M's row times 1..1e3) at every position; the crafted row moves the sum by at
// most C beyond its clipped contribution.
func TestClippedSumDecomposes(t *testing.T) {
	const n, c, b = 12, 8, 6
	m := lowRank(t, n, c, 3)
	for _, scale := range []float32{1, 10, 100, 1000} {
		for pos := range b {
			mm := slices.Clone(m)
			for j := range c {
				mm[pos*c+j] *= scale
			}
			md := newModel(t, testConfig(), mm, n, c, 1)
			r := md.cfg.Rank
			xb, mb := md.x[:b*r], mm[:b*c]
			if err := md.clippedSum(xb, mb, b); err != nil {
				t.Fatal(err)
			}
			want := make([]float64, r*c)
			for i := range b {
				res := make([]float64, c)
				for j := range c {
					v := -float64(mb[i*c+j])
					for p := range r {
						v += float64(xb[i*r+p]) * float64(md.y[p*c+j])
					}
					res[j] = v
				}
				g := make([]float64, r*c)
				sq := 0.0
				for p := range r {
					for j := range c {
						g[p*c+j] = float64(xb[i*r+p]) * res[j]
						sq += g[p*c+j] * g[p*c+j]
					}
				}
				f := math.Min(1, md.cfg.Clip/math.Sqrt(sq))
				for k := range g {
					want[k] += f * g[k]
				}
			}
			for k, w := range want {
				if d := math.Abs(float64(md.grad[k]) - w); d > 1e-5*(1+math.Abs(w)) {
					t.Fatalf("scale %g row %d: clipped sum[%d] = %v, materialised %v", scale, pos, k, md.grad[k], w)
				}
			}
			// Without the crafted row, the sum moves by at most C.
			sum := slices.Clone(md.grad)
			rest := make([]int, 0, b-1)
			for i := range b {
				if i != pos {
					rest = append(rest, i)
				}
			}
			xr, mr := make([]float32, 0, (b-1)*r), make([]float32, 0, (b-1)*c)
			for _, i := range rest {
				xr, mr = append(xr, xb[i*r:(i+1)*r]...), append(mr, mb[i*c:(i+1)*c]...)
			}
			if err := md.clippedSum(xr, mr, b-1); err != nil {
				t.Fatal(err)
			}
			d := 0.0
			for k := range sum {
				d += math.Pow(float64(sum[k])-float64(md.grad[k]), 2)
			}
			if math.Sqrt(d) > md.cfg.Clip*(1+1e-5) {
				t.Fatalf("scale %g row %d: one row moved the clipped sum by %v > C = %v", scale, pos, math.Sqrt(d), md.cfg.Clip)
			}
		}
	}
}

// run takes epochs of shuffle-once cyclic batches and returns the records.
func run(t *testing.T, md *Model, b, epochs int, noise *optim.Noise, perm []int) []accounting.Step {
	t.Helper()
	var recs []accounting.Step
	for range epochs {
		for j := range md.n / b {
			rec, err := md.Step(perm[j*b:(j+1)*b], j, noise)
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, rec)
		}
	}
	return recs
}

// TestNonPrivateDecreases: σ = 0 (MBCD and SGD through the same code) reduces ½‖XY − M‖².
func TestNonPrivateDecreases(t *testing.T) {
	const n, c, b = 60, 20, 10
	m := lowRank(t, n, c, 3)
	for _, joint := range []bool{false, true} {
		cfg := testConfig()
		cfg.NoiseMultiplier, cfg.Clip, cfg.Joint = 0, math.Inf(1), joint
		md := newModel(t, cfg, m, n, c, 2)
		before, _ := md.Objective()
		run(t, md, b, 40, optim.NewSeededNoise(1), rand.New(rand.NewPCG(3, 4)).Perm(n))
		after, rel := md.Objective()
		if !(after < 0.2*before) || !(rel < 0.1) {
			t.Errorf("joint %v: objective %v → %v (relative error %v): want a decrease by 5× to < 10%%", joint, before, after, rel)
		}
	}
}

// TestDeclareEqualsStep: the record Declare gives is the one Step returns.
func TestDeclareEqualsStep(t *testing.T) {
	const n, c = 40, 10
	m := lowRank(t, n, c, 3)
	for _, tc := range []struct {
		name  string
		sigma float64
		b     int
	}{{"private b=10", 2, 10}, {"private b=20", 0.5, 20}, {"non-private", 0, 8}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.NoiseMultiplier = tc.sigma
			md := newModel(t, cfg, m, n, c, 3)
			perm := rand.New(rand.NewPCG(5, 6)).Perm(n)
			for j := range n / tc.b {
				want := md.Declare(tc.b, j)
				got, err := md.Step(perm[j*tc.b:(j+1)*tc.b], j, optim.NewSeededNoise(9))
				if err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Fatalf("batch %d: Step recorded %+v, Declare %+v", j, got, want)
				}
				if tc.sigma > 0 {
					if err := got.Validate(); err != nil {
						t.Fatal(err)
					}
				} else if got.Mechanism != accounting.NonPrivate {
					t.Fatalf("σ = 0 recorded mechanism %q", got.Mechanism)
				}
			}
		})
	}
}

// TestNonNegative: large noise never leaves X or Y negative nor a hidden row outside the ρ-ball.
func TestNonNegative(t *testing.T) {
	const n, c, b = 30, 10, 5
	m := lowRank(t, n, c, 3)
	cfg := testConfig()
	cfg.NoiseMultiplier = 50
	for _, joint := range []bool{false, true} {
		cfg.Joint = joint
		md := newModel(t, cfg, m, n, c, 4)
		run(t, md, b, 3, optim.NewSeededNoise(2), rand.New(rand.NewPCG(1, 1)).Perm(n))
		for i, v := range md.y {
			if !(v >= 0) {
				t.Fatalf("joint %v: Y[%d] = %v", joint, i, v)
			}
		}
		for i := range n {
			row, sq := md.x[i*3:(i+1)*3], 0.0
			for _, v := range row {
				if !(v >= 0) {
					t.Fatalf("joint %v: X row %d = %v", joint, i, row)
				}
				sq += float64(v) * float64(v)
			}
			if math.Sqrt(sq) > cfg.RowNorm {
				t.Fatalf("joint %v: X row %d has norm %v > ρ = %v", joint, i, math.Sqrt(sq), cfg.RowNorm)
			}
		}
	}
}

// TestSeededBitIdentical: the same seeds give the same bits.
func TestSeededBitIdentical(t *testing.T) {
	const n, c, b = 40, 10, 10
	m := lowRank(t, n, c, 3)
	var ys, xs [2][]float32
	for k := range 2 {
		md := newModel(t, testConfig(), m, n, c, 5)
		run(t, md, b, 4, optim.NewSeededNoise(11), rand.New(rand.NewPCG(2, 2)).Perm(n))
		ys[k], xs[k] = slices.Clone(md.Y()), slices.Clone(md.X())
	}
	for i := range ys[0] {
		if math.Float32bits(ys[0][i]) != math.Float32bits(ys[1][i]) {
			t.Fatalf("Y[%d]: %v then %v", i, ys[0][i], ys[1][i])
		}
	}
	for i := range xs[0] {
		if math.Float32bits(xs[0][i]) != math.Float32bits(xs[1][i]) {
			t.Fatalf("X[%d]: %v then %v", i, xs[0][i], xs[1][i])
		}
	}
}

// TestRefusals: configurations and data the model cannot run say what to change.
func TestRefusals(t *testing.T) {
	m := lowRank(t, 10, 5, 2)
	bad := slices.Clone(m)
	bad[7] = float32(math.NaN())
	for _, tc := range []struct {
		name string
		edit func(*Config)
		m    []float32
		want string
	}{
		{"private without clip", func(c *Config) { c.Clip = math.Inf(1) }, m, "finite clip"},
		{"no row bound", func(c *Config) { c.RowNorm = math.Inf(1) }, m, "row norm"},
		{"no inner steps", func(c *Config) { c.InnerSteps = 0 }, m, "inner steps"},
		{"rank too large", func(c *Config) { c.Rank = 6 }, m, "rank"},
		{"non-finite M", func(*Config) {}, bad, "non-finite"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			tc.edit(&cfg)
			_, err := New(cfg, tc.m, 10, 5, rand.New(rand.NewPCG(1, 1)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.want)
			}
		})
	}
}
