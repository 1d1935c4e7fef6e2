//go:build integration

package data

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// mnistT10kDir is the real MNIST test set in the shared folder beside the checkout
// ($DPTRAIN_SHARED, which the Makefile sets, or ../shared from the repository root).
var mnistT10kDir = sharedData("mnist-t10k")

var skipNoMNIST = "MNIST test set not found at " + mnistT10kDir + " (the shared data beside the project)"

func sharedData(name string) string {
	root := os.Getenv("DPTRAIN_SHARED")
	if root == "" {
		root = filepath.Join("..", "..", "shared")
	}
	return filepath.Join(root, "data", name)
}

const (
	fashionDebian   = "/usr/share/datasets/fashion-mnist"
	skipNoFashion   = "Fashion-MNIST not found at " + fashionDebian + " (install Debian's dataset-fashion-mnist)"
	realDataEpsilon = 5e-4
)

func requireDir(t *testing.T, dir, msg string) {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		t.Skip(msg)
	}
}

// pixelMoments returns the mean and standard deviation of all values of s, in float64.
func pixelMoments(s *Split) (mean, std float64) {
	var sum, ss float64
	for _, v := range s.X {
		sum += float64(v)
		ss += float64(v) * float64(v)
	}
	n := float64(len(s.X))
	mean = sum / n
	return mean, math.Sqrt(ss/n - mean*mean)
}

// checkLabels compares s's examples per class and first labels with the published ones.
func checkLabels(t *testing.T, split string, s *Split, counts []int, first []int32) {
	t.Helper()
	if got := s.ClassCounts(len(counts)); !slices.Equal(got, counts) {
		t.Errorf("%s label histogram %v, want %v", split, got, counts)
	}
	if got := s.Y[:len(first)]; !slices.Equal(got, first) {
		t.Errorf("first %s labels %v, want %v", split, got, first)
	}
}

func TestRealMNISTTestSet(t *testing.T) {
	requireDir(t, mnistT10kDir, skipNoMNIST)
	l := &Locator{Dir: mnistT10kDir}
	d, err := l.Load(t.Context(), "mnist")
	if err != nil {
		t.Fatal(err)
	}
	if d.Train != nil {
		t.Errorf("train split has %d examples, want nil (the directory holds only t10k files)", d.Train.Len())
	}
	if d.Test.Len() != 10000 || d.Test.D != 784 || !slices.Equal(d.Shape, []int{1, 28, 28}) {
		t.Fatalf("test N=%d D=%d shape %v, want 10000, 784, [1 28 28]", d.Test.Len(), d.Test.D, d.Shape)
	}
	// The published per-digit counts of the MNIST test set; its first digits are 7, 2, 1, 0, 4
	// (LeCun's test set order).
	checkLabels(t, "test", d.Test, []int{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009}, []int32{7, 2, 1, 0, 4})
	// The test set's pixel mean and std are 0.1325 and 0.3105 (the 0.1307/0.3081 constants
	// are the training set's).
	m, s := pixelMoments(d.Test)
	if math.Abs(m-0.1325) > realDataEpsilon || math.Abs(s-0.3105) > realDataEpsilon {
		t.Errorf("pixel mean %.4f std %.4f, want 0.1325, 0.3105", m, s)
	}
	for _, f := range []string{"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"} {
		spec, _ := Lookup("mnist")
		rf, _ := spec.file(f)
		if err := Verify(filepath.Join(mnistT10kDir, f), rf); err != nil {
			t.Error(err)
		}
	}
}

func TestRealFashionMNIST(t *testing.T) {
	requireDir(t, fashionDebian, skipNoFashion)
	l := &Locator{CacheDir: t.TempDir(), SystemRoots: []string{filepath.Dir(fashionDebian)}}
	d, err := l.Load(t.Context(), "fashion-mnist")
	if err != nil {
		t.Fatal(err)
	}
	if d.Source != fashionDebian+" (system)" {
		t.Errorf("source %q, want %s (system)", d.Source, fashionDebian)
	}
	if d.Train.Len() != 60000 || d.Test.Len() != 10000 {
		t.Fatalf("train/test = %d/%d, want 60000/10000", d.Train.Len(), d.Test.Len())
	}
	// Fashion-MNIST is balanced: 6000 training and 1000 test images per class.
	checkLabels(t, "training", d.Train, slices.Repeat([]int{6000}, 10), nil)
	checkLabels(t, "test", d.Test, slices.Repeat([]int{1000}, 10), nil)
	// First labels as printed in the TensorFlow classification tutorial.
	if got := d.Train.Y[:10]; !slices.Equal(got, []int32{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}) {
		t.Errorf("first training labels %v", got)
	}
	if got := d.Test.Y[:10]; !slices.Equal(got, []int32{9, 2, 1, 1, 6, 1, 4, 6, 5, 7}) {
		t.Errorf("first test labels %v", got)
	}
	// The published standardisation constants are the training set's mean and std.
	m, s := pixelMoments(d.Train)
	if math.Abs(m-0.2860) > realDataEpsilon || math.Abs(s-0.3530) > realDataEpsilon {
		t.Errorf("training pixel mean %.4f std %.4f, want 0.2860, 0.3530", m, s)
	}
	if err := d.Standardize(); err != nil {
		t.Fatal(err)
	}
	m, s = pixelMoments(d.Train)
	if math.Abs(m) > 2e-3 || math.Abs(s-1) > 2e-3 {
		t.Errorf("standardized training mean %.4f std %.4f, want 0, 1", m, s)
	}
	spec, _ := Lookup("fashion-mnist")
	for _, f := range spec.Files {
		if err := Verify(filepath.Join(fashionDebian, f.Name), f); err != nil {
			t.Error(err)
		}
	}
}

// TestRealMNIST checks the full MNIST in the data directory ($DPTRAIN_DATA or the user
// cache), where dptrain data download --dataset mnist (and make) puts it: the four published
// checksums, 60,000 training and 10,000 test digits.
func TestRealMNIST(t *testing.T) {
	l := &Locator{SystemRoots: []string{}}
	loc, err := l.Find("mnist")
	if err != nil {
		t.Skipf("MNIST not in the data directory (%v): get it with dptrain data download --dataset mnist (or make)", err)
	}
	spec := loc.Spec
	for _, f := range spec.Files {
		if _, err := os.Stat(filepath.Join(loc.Path, f.Name)); err != nil {
			t.Skipf("%s lacks %s: get it with dptrain data download --dataset mnist (or make)", loc.Path, f.Name)
		}
		if err := Verify(filepath.Join(loc.Path, f.Name), f); err != nil {
			t.Error(err)
		}
	}
	d, err := l.Read(loc)
	if err != nil {
		t.Fatal(err)
	}
	if d.Train.Len() != 60000 || d.Test.Len() != 10000 {
		t.Fatalf("train/test = %d/%d, want 60000/10000", d.Train.Len(), d.Test.Len())
	}
	// The published per-digit counts of the MNIST training set, and its first labels.
	checkLabels(t, "training", d.Train, []int{5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949}, []int32{5, 0, 4, 1, 9})
	m, s := pixelMoments(d.Train)
	if math.Abs(m-spec.Mean[0]) > realDataEpsilon || math.Abs(s-spec.Std[0]) > realDataEpsilon {
		t.Errorf("training pixel mean %.4f std %.4f, want the published %.4f, %.4f", m, s, spec.Mean[0], spec.Std[0])
	}
}

// cifarJPEGDir is the CIFAR-10 JPEG copy in the shared folder beside the checkout.
var cifarJPEGDir = sharedData("cifar10-jpeg")

// TestRealCIFAR10JPEG reads the CIFAR-10 JPEG copy (through the cache of decoded images in the
// data directory: the first run decodes 60,000 JPEG files) and checks its counts.
func TestRealCIFAR10JPEG(t *testing.T) {
	requireDir(t, cifarJPEGDir, "CIFAR-10 JPEG copy not found at "+cifarJPEGDir+" (the shared data beside the project: cifar10-jpeg/cifar10-jpeg.tar.gz)")
	d, err := (&Locator{Dir: cifarJPEGDir}).Load(t.Context(), CIFAR10JPEG)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	if d.Train.Len() != 50000 || d.Test.Len() != 10000 || !slices.Equal(d.Shape, []int{3, 32, 32}) || d.Classes != 10 {
		t.Fatalf("train/test = %d/%d of %v in %d classes, want 50000/10000 of [3 32 32] in 10", d.Train.Len(), d.Test.Len(), d.Shape, d.Classes)
	}
	checkLabels(t, "training", d.Train, slices.Repeat([]int{5000}, 10), nil)
	checkLabels(t, "test", d.Test, slices.Repeat([]int{1000}, 10), nil)
	// JPEG at quality 75 keeps the pixel statistics close to CIFAR-10's published ones.
	spec, _ := Lookup(CIFAR10JPEG)
	per := 32 * 32
	for c := range 3 {
		var sum float64
		for i := range d.Train.N {
			for _, v := range d.Train.Row(i)[c*per : (c+1)*per] {
				sum += float64(v)
			}
		}
		if m := sum / float64(d.Train.N*per); math.Abs(m-spec.Mean[c]) > 0.01 {
			t.Errorf("channel %d mean %.4f, want CIFAR-10's %.4f ± 0.01", c, m, spec.Mean[c])
		}
	}
}
