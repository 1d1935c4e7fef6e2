package data

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Names of the synthetic datasets, generated deterministically from a seed.
const (
	SyntheticMixture  = "synthetic-mixture"
	SyntheticLogistic = "synthetic-logistic"
	SyntheticLowRank  = "synthetic-lowrank"
)

// MixtureConfig configures a Gaussian-mixture classification set: class c has mean
// μ_c = Separation·u_c with u_c uniform on the unit sphere, labels are uniform over the
// classes, and an example of class c is μ_c + Noise·N(0, I).
type MixtureConfig struct {
	Train, Test int
	// Dim is the number of features; ignored when Shape is set.
	Dim int
	// Shape, when set, makes the examples images of this shape (e.g. [1 28 28]); Dim is then
	// the product of Shape.
	Shape   []int
	Classes int
	// Separation is the norm of each class mean and Noise the per-coordinate noise std.
	Separation, Noise float64
	Seed              uint64
}

// DefaultMixture mirrors the Madelon-like set of Chen & Liu, "Hidden State Differential Private Mini-Batch Block Coordinate Descent",
// Appendix D.2: 6000 examples split 80/20,
// 20 features, 5 classes.
var DefaultMixture = MixtureConfig{Train: 4800, Test: 1200, Dim: 20, Classes: 5, Separation: 3, Noise: 1}

// LogisticConfig configures a binary logistic-regression set: a true weight vector w* uniform
// on the sphere of radius WeightNorm, features x = Radius·g/√Dim with g ~ N(0, I) rescaled to
// ‖x‖ ≤ Radius, and labels y ~ Bernoulli(1/(1+exp(−⟨w*, x⟩))).
type LogisticConfig struct {
	Train, Test, Dim int
	// Radius is the bound R on every example's l2 norm.
	Radius float64
	// WeightNorm is ‖w*‖; larger values make the labels less noisy.
	WeightNorm float64
	Seed       uint64
}

// DefaultLogistic is the synthetic-logistic default.
var DefaultLogistic = LogisticConfig{Train: 10000, Test: 2000, Dim: 20, Radius: 1, WeightNorm: 8}

// LowRankConfig configures a non-negative low-rank matrix M = max(W H + Noise·N(0, 1), 0)
// with W (Rows×Rank) and H (Rank×Cols) uniform on [0, 1), as in Chen & Liu's Appendix D.1.1 (after
// Xu & Yin 2013: 1000×200 of rank 10). Each row of M is one example.
type LowRankConfig struct {
	Rows, Cols, Rank int
	Noise            float64
	Seed             uint64
}

// DefaultLowRank is the synthetic-lowrank default (the sizes of Chen & Liu's Appendix D.1.1).
var DefaultLowRank = LowRankConfig{Rows: 1000, Cols: 200, Rank: 10, Noise: 0.01}

// Factors holds the true factors of a synthetic low-rank matrix, row-major.
type Factors struct {
	Rows, Rank, Cols int
	W, H             []float64
}

// newRand returns the generator of a synthetic set; the second PCG word separates the
// streams of different generators sharing a seed.
func newRand(seed, stream uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, stream)) }

// NewMixture generates a Gaussian-mixture set and returns it with the class means.
func NewMixture(cfg MixtureConfig) (*Dataset, [][]float64, error) {
	shape := []int{cfg.Dim}
	if len(cfg.Shape) > 0 {
		shape = append([]int(nil), cfg.Shape...)
	}
	dim := 1
	for _, s := range shape {
		if s <= 0 {
			return nil, nil, fmt.Errorf("data: mixture shape %v: every dimension must be positive", shape)
		}
		dim *= s
	}
	if cfg.Train < 0 || cfg.Test < 0 || cfg.Train+cfg.Test == 0 {
		return nil, nil, fmt.Errorf("data: mixture sizes train=%d test=%d: want non-negative sizes, not both 0", cfg.Train, cfg.Test)
	}
	if cfg.Classes < 2 {
		return nil, nil, fmt.Errorf("data: mixture with %d classes: want at least 2", cfg.Classes)
	}
	if !(cfg.Noise >= 0) || !(cfg.Separation >= 0) {
		return nil, nil, fmt.Errorf("data: mixture separation %v and noise %v must be non-negative", cfg.Separation, cfg.Noise)
	}
	rng := newRand(cfg.Seed, 1)
	means := make([][]float64, cfg.Classes)
	for c := range means {
		means[c] = sphere(rng, dim, cfg.Separation)
	}
	gen := func(n int) *Split {
		s := &Split{X: make([]float32, n*dim), Y: make([]int32, n), N: n, D: dim}
		for i := range n {
			c := rng.IntN(cfg.Classes)
			s.Y[i] = int32(c)
			row := s.Row(i)
			for j := range row {
				row[j] = float32(means[c][j] + cfg.Noise*rng.NormFloat64())
			}
		}
		return s
	}
	d := &Dataset{Name: SyntheticMixture, Shape: shape, Classes: cfg.Classes,
		Source: fmt.Sprintf("generated: %s seed=%d", SyntheticMixture, cfg.Seed)}
	d.Train, d.Test = gen(cfg.Train), gen(cfg.Test)
	return d, means, nil
}

// NewLogistic generates a logistic-regression set and returns it with the true weights w*.
func NewLogistic(cfg LogisticConfig) (*Dataset, []float64, error) {
	if cfg.Dim <= 0 || cfg.Train < 0 || cfg.Test < 0 || cfg.Train+cfg.Test == 0 {
		return nil, nil, fmt.Errorf("data: logistic set dim=%d train=%d test=%d: want dim > 0 and non-negative sizes, not both 0", cfg.Dim, cfg.Train, cfg.Test)
	}
	if !(cfg.Radius > 0) || math.IsInf(cfg.Radius, 0) || !(cfg.WeightNorm >= 0) {
		return nil, nil, fmt.Errorf("data: logistic set radius %v must be positive and finite, weight norm %v non-negative", cfg.Radius, cfg.WeightNorm)
	}
	rng := newRand(cfg.Seed, 2)
	w := sphere(rng, cfg.Dim, cfg.WeightNorm)
	gen := func(n int) *Split {
		s := &Split{X: make([]float32, n*cfg.Dim), Y: make([]int32, n), N: n, D: cfg.Dim}
		scale := cfg.Radius / math.Sqrt(float64(cfg.Dim))
		for i := range n {
			row := s.Row(i)
			for j := range row {
				row[j] = float32(scale * rng.NormFloat64())
			}
		}
		s.BoundNorm(cfg.Radius)
		for i := range n {
			z := 0.0
			for j, v := range s.Row(i) {
				z += w[j] * float64(v)
			}
			if rng.Float64() < 1/(1+math.Exp(-z)) {
				s.Y[i] = 1
			}
		}
		return s
	}
	d := &Dataset{Name: SyntheticLogistic, Shape: []int{cfg.Dim}, Classes: 2,
		Source:        fmt.Sprintf("generated: %s seed=%d", SyntheticLogistic, cfg.Seed),
		Preprocessing: []string{fmt.Sprintf("bound-norm(%g)", cfg.Radius)}}
	d.Train, d.Test = gen(cfg.Train), gen(cfg.Test)
	return d, w, nil
}

// NewLowRank generates a non-negative low-rank matrix and returns it (rows of M in Train, no
// labels, no Test) with its true factors.
func NewLowRank(cfg LowRankConfig) (*Dataset, *Factors, error) {
	if cfg.Rows <= 0 || cfg.Cols <= 0 || cfg.Rank <= 0 || cfg.Rank > min(cfg.Rows, cfg.Cols) {
		return nil, nil, fmt.Errorf("data: low-rank matrix %d×%d of rank %d: want positive sizes and rank ≤ min(rows, cols)", cfg.Rows, cfg.Cols, cfg.Rank)
	}
	if !(cfg.Noise >= 0) || math.IsInf(cfg.Noise, 0) {
		return nil, nil, fmt.Errorf("data: low-rank noise std %v must be non-negative and finite", cfg.Noise)
	}
	rng := newRand(cfg.Seed, 3)
	f := &Factors{Rows: cfg.Rows, Rank: cfg.Rank, Cols: cfg.Cols,
		W: make([]float64, cfg.Rows*cfg.Rank), H: make([]float64, cfg.Rank*cfg.Cols)}
	for i := range f.W {
		f.W[i] = rng.Float64()
	}
	for i := range f.H {
		f.H[i] = rng.Float64()
	}
	s := &Split{X: make([]float32, cfg.Rows*cfg.Cols), N: cfg.Rows, D: cfg.Cols}
	for i := range cfg.Rows {
		for j := range cfg.Cols {
			v := 0.0
			for k := range cfg.Rank {
				v += f.W[i*cfg.Rank+k] * f.H[k*cfg.Cols+j]
			}
			v += cfg.Noise * rng.NormFloat64()
			s.X[i*cfg.Cols+j] = float32(math.Max(v, 0))
		}
	}
	d := &Dataset{Name: SyntheticLowRank, Shape: []int{cfg.Cols}, Train: s,
		Source: fmt.Sprintf("generated: %s seed=%d", SyntheticLowRank, cfg.Seed)}
	return d, f, nil
}

// Synthetic generates the synthetic dataset called name with its default configuration and
// the given seed.
func Synthetic(name string, seed uint64) (*Dataset, error) {
	switch canonicalName(name) {
	case SyntheticMixture:
		cfg := DefaultMixture
		cfg.Seed = seed
		d, _, err := NewMixture(cfg)
		return d, err
	case SyntheticLogistic:
		cfg := DefaultLogistic
		cfg.Seed = seed
		d, _, err := NewLogistic(cfg)
		return d, err
	case SyntheticLowRank:
		cfg := DefaultLowRank
		cfg.Seed = seed
		d, _, err := NewLowRank(cfg)
		return d, err
	}
	return nil, fmt.Errorf("data: %q is not a synthetic dataset: want %s, %s or %s", name, SyntheticMixture, SyntheticLogistic, SyntheticLowRank)
}

// sphere draws a vector uniform on the sphere of radius r in dimension d.
func sphere(rng *rand.Rand, d int, r float64) []float64 {
	v := make([]float64, d)
	for {
		var ss float64
		for i := range v {
			v[i] = rng.NormFloat64()
			ss += v[i] * v[i]
		}
		if ss > 0 {
			s := r / math.Sqrt(ss)
			for i := range v {
				v[i] *= s
			}
			return v
		}
	}
}
