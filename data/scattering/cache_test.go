package scattering

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dptrain/dptrain/data"
)

func tinyDataset(n int) *data.Dataset {
	mk := func(n, seed int) *data.Split {
		sp := &data.Split{X: make([]float32, n*16*16), Y: make([]int32, n), N: n, D: 256}
		for i := range sp.X {
			sp.X[i] = float32((i*7+seed)%11) / 11
		}
		for i := range sp.Y {
			sp.Y[i] = int32(i % 3)
		}
		return sp
	}
	return &data.Dataset{Name: "tiny", Shape: []int{1, 16, 16}, Classes: 3, Train: mk(n, 1), Test: mk(n/2, 2), Source: "test"}
}

func TestCachedFeatures(t *testing.T) {
	dir := t.TempDir()
	ds := tinyDataset(12)
	opts := Options{J: 2, L: 4, Groups: 5}
	first, hit, err := CachedFeatures(t.Context(), ds, opts, dir)
	if err != nil || hit {
		t.Fatalf("first call: hit %v, err %v", hit, err)
	}
	if want := []int{25, 4, 4}; !slices.Equal(first.Shape, want) || first.Train.D != 400 {
		t.Fatalf("shape %v D %d, want %v", first.Shape, first.Train.D, want)
	}
	second, hit, err := CachedFeatures(t.Context(), ds, opts, dir)
	if err != nil || !hit {
		t.Fatalf("second call: hit %v, err %v", hit, err)
	}
	if !slices.Equal(first.Train.X, second.Train.X) || !slices.Equal(first.Test.X, second.Test.X) || !slices.Equal(first.Preprocessing, second.Preprocessing) {
		t.Fatal("cached features differ from the computed ones")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "scatternet-*.bin"))
	if len(files) != 1 {
		t.Fatalf("cache files %v", files)
	}
	// A truncated file is detected and recomputed.
	b, _ := os.ReadFile(files[0])
	if err := os.WriteFile(files[0], b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	third, hit, err := CachedFeatures(t.Context(), ds, opts, dir)
	if err != nil || hit || !slices.Equal(third.Train.X, first.Train.X) {
		t.Fatalf("after truncation: hit %v, err %v", hit, err)
	}
	// Other options or other pixels get another key.
	if cacheKey(ds, opts) == cacheKey(ds, Options{J: 2, L: 4}) {
		t.Error("group normalisation does not change the cache key")
	}
	ds2 := tinyDataset(12)
	ds2.Train.X[5] += 1
	if cacheKey(ds, opts) == cacheKey(ds2, opts) {
		t.Error("a changed pixel does not change the cache key")
	}
}

func TestFeaturesErrors(t *testing.T) {
	ds := tinyDataset(2)
	ds.Shape = []int{256}
	if _, err := Features(t.Context(), ds, Options{}); err == nil {
		t.Error("a flat dataset was accepted")
	}
	ds = tinyDataset(2)
	if _, err := Features(t.Context(), ds, Options{J: 2, L: 4, Groups: 7}); err == nil {
		t.Error("7 groups of 25 channels were accepted")
	}
}

// BenchmarkMNIST10k transforms the real MNIST test set (10,000 images) when the shared data
// is present: go test ./data/scattering -bench MNIST10k -benchtime 1x.
func BenchmarkMNIST10k(b *testing.B) {
	root := os.Getenv("DPTRAIN_SHARED")
	if root == "" {
		root = filepath.Join("..", "..", "..", "shared")
	}
	dir := filepath.Join(root, "data", "mnist-t10k")
	if _, err := os.Stat(dir); err != nil {
		b.Skip("MNIST test set not found at " + dir)
	}
	l := &data.Locator{Dir: dir}
	ds, err := l.Load(b.Context(), "mnist")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := Features(b.Context(), ds, Options{Groups: 27}); err != nil {
			b.Fatal(err)
		}
	}
}
