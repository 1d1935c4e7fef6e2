package data

import (
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"
)

func TestSyntheticDeterministic(t *testing.T) {
	for _, name := range []string{SyntheticMixture, SyntheticLogistic, SyntheticLowRank} {
		a, err := Synthetic(name, 7)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Synthetic(name, 7)
		c, _ := Synthetic(name, 8)
		if !slices.Equal(a.Train.X, b.Train.X) || !slices.Equal(a.Train.Y, b.Train.Y) {
			t.Errorf("%s: the same seed gave different data", name)
		}
		if slices.Equal(a.Train.X, c.Train.X) {
			t.Errorf("%s: different seeds gave the same data", name)
		}
		spec, err := Lookup(name)
		if err != nil {
			t.Fatal(err)
		}
		if a.Train.Len() != spec.TrainSize || a.Test.Len() != spec.TestSize || a.Dim() != a.Train.D || !slices.Equal(a.Shape, spec.Shape) {
			t.Errorf("%s: train %d test %d shape %v, spec says %d, %d, %v", name, a.Train.Len(), a.Test.Len(), a.Shape, spec.TrainSize, spec.TestSize, spec.Shape)
		}
	}
}

func TestMixtureClassMeans(t *testing.T) {
	cfg := MixtureConfig{Train: 20000, Dim: 4, Classes: 3, Separation: 2, Noise: 0.5, Seed: 1}
	d, means, err := NewMixture(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sum := make([][]float64, 3)
	for c := range sum {
		sum[c] = make([]float64, 4)
		if n := math.Sqrt(floats(means[c])); math.Abs(n-2) > 1e-12 {
			t.Errorf("class %d mean has norm %v, want the separation 2", c, n)
		}
	}
	counts := d.Train.ClassCounts(3)
	for i := range d.Train.N {
		for j, v := range d.Train.Row(i) {
			sum[d.Train.Y[i]][j] += float64(v)
		}
	}
	for c := range 3 {
		if math.Abs(float64(counts[c])-20000.0/3) > 5*math.Sqrt(20000*2.0/9) {
			t.Errorf("class %d has %d examples, want about 6667", c, counts[c])
		}
		se := 0.5 / math.Sqrt(float64(counts[c]))
		for j := range 4 {
			if got := sum[c][j] / float64(counts[c]); math.Abs(got-means[c][j]) > 5*se {
				t.Errorf("class %d feature %d sample mean %.4f, want %.4f ± %.4f", c, j, got, means[c][j], 5*se)
			}
		}
	}
	img, _, err := NewMixture(MixtureConfig{Train: 3, Test: 1, Shape: []int{1, 4, 4}, Classes: 2, Separation: 1, Noise: 1})
	if err != nil || !slices.Equal(img.Shape, []int{1, 4, 4}) || img.Train.D != 16 {
		t.Errorf("image mixture: %v, shape %v", err, img.Shape)
	}
}

// floats returns the squared norm of v.
func floats(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return s
}

func TestLogisticLabelsFollowTrueWeights(t *testing.T) {
	cfg := LogisticConfig{Train: 40000, Dim: 5, Radius: 2, WeightNorm: 3, Seed: 2}
	d, w, err := NewLogistic(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Train.MaxNorm(); got > 2 {
		t.Errorf("max feature norm %v exceeds R = 2", got)
	}
	// E[y | x] = σ(⟨w, x⟩): the labels' mean must match the mean predicted probability, in
	// each half of the margin.
	var ySum, pSum [2]float64
	var n [2]int
	for i := range d.Train.N {
		z := 0.0
		for j, v := range d.Train.Row(i) {
			z += w[j] * float64(v)
		}
		h := 0
		if z > 0 {
			h = 1
		}
		ySum[h] += float64(d.Train.Y[i])
		pSum[h] += 1 / (1 + math.Exp(-z))
		n[h]++
	}
	for h := range 2 {
		got, want := ySum[h]/float64(n[h]), pSum[h]/float64(n[h])
		if math.Abs(got-want) > 5*math.Sqrt(0.25/float64(n[h])) {
			t.Errorf("margin half %d: label mean %.4f, predicted %.4f", h, got, want)
		}
	}
	if math.Abs(math.Sqrt(floats(w))-3) > 1e-12 {
		t.Errorf("‖w*‖ = %v, want 3", math.Sqrt(floats(w)))
	}
}

func TestLowRank(t *testing.T) {
	cfg := LowRankConfig{Rows: 60, Cols: 30, Rank: 4, Seed: 3}
	d, f, err := NewLowRank(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// Without noise, M = W H exactly (up to float32) and has rank 4.
	W := mat.NewDense(60, 4, f.W)
	H := mat.NewDense(4, 30, f.H)
	var M mat.Dense
	M.Mul(W, H)
	for i := range 60 {
		for j := range 30 {
			if got, want := float64(d.Train.X[i*30+j]), M.At(i, j); math.Abs(got-want) > 1e-6*want {
				t.Fatalf("M[%d,%d] = %v, want %v", i, j, got, want)
			}
		}
	}
	x64 := make([]float64, len(d.Train.X))
	for i, v := range d.Train.X {
		x64[i] = float64(v)
	}
	var svd mat.SVD
	if !svd.Factorize(mat.NewDense(60, 30, x64), mat.SVDNone) {
		t.Fatal("SVD failed")
	}
	sv := svd.Values(nil)
	if sv[4]/sv[0] > 1e-5 || sv[3]/sv[0] < 1e-3 {
		t.Errorf("singular values %v: want 4 large and the rest at float32 round-off", sv[:6])
	}
	cfg.Noise = 0.5
	noisy, _, _ := NewLowRank(cfg)
	for _, v := range noisy.Train.X {
		if v < 0 {
			t.Fatalf("negative entry %v: noise must be clipped at 0", v)
		}
	}
	if noisy.Train.Y != nil || noisy.Test != nil || noisy.Classes != 0 {
		t.Error("low-rank set should be unlabelled with no test split")
	}
	if _, _, err := NewLowRank(LowRankConfig{Rows: 5, Cols: 5, Rank: 6}); err == nil {
		t.Error("rank above min(rows, cols) accepted")
	}
}
