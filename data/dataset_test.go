package data

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func tinySplit() *Split {
	// Four examples of three features: example i is (10i, 10i+1, 10i+2), label i+5.
	s := &Split{X: make([]float32, 12), Y: []int32{5, 6, 7, 8}, N: 4, D: 3}
	for i := range 4 {
		for j := range 3 {
			s.X[i*3+j] = float32(10*i + j)
		}
	}
	return s
}

func TestGather(t *testing.T) {
	s := tinySplit()
	x, y := make([]float32, 9), make([]int32, 3)
	if err := s.Gather([]int{3, 0, 3}, x, y); err != nil {
		t.Fatal(err)
	}
	if want := []float32{30, 31, 32, 0, 1, 2, 30, 31, 32}; !slices.Equal(x, want) {
		t.Errorf("x = %v, want %v", x, want)
	}
	if want := []int32{8, 5, 8}; !slices.Equal(y, want) {
		t.Errorf("y = %v, want %v", y, want)
	}
	for _, c := range []struct {
		idx  []int
		x    []float32
		y    []int32
		want string
	}{
		{[]int{0, 1}, make([]float32, 5), nil, "buffer holds 5 values, need 6"},
		{[]int{0, 1}, make([]float32, 6), make([]int32, 1), "label buffer holds 1 labels, need 2"},
		{[]int{0, 4}, make([]float32, 6), nil, "index 4 at position 1 is outside [0, 4)"},
	} {
		if err := s.Gather(c.idx, c.x, c.y); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Gather(%v) error %v, want %q", c.idx, err, c.want)
		}
	}
	big := make([]float32, 4*3)
	idx := []int{2, 1}
	if allocs := testing.AllocsPerRun(100, func() { s.Gather(idx, big, y) }); allocs != 0 {
		t.Errorf("Gather allocates %v times per call", allocs)
	}
}

func TestGatherPadded(t *testing.T) {
	s := tinySplit()
	x := []float32{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}
	y := []int32{9, 9, 9, 9}
	mask := make([]float32, 4)
	if err := s.GatherPadded([]int{2}, x, y, mask); err != nil {
		t.Fatal(err)
	}
	if want := []float32{20, 21, 22, 0, 0, 0, 0, 0, 0, 0, 0, 0}; !slices.Equal(x, want) {
		t.Errorf("x = %v, want %v", x, want)
	}
	if !slices.Equal(y, []int32{7, 0, 0, 0}) || !slices.Equal(mask, []float32{1, 0, 0, 0}) {
		t.Errorf("y = %v mask = %v", y, mask)
	}
	if err := s.GatherPadded([]int{0, 1, 2, 3, 0}, make([]float32, 15), nil, mask); err == nil {
		t.Error("a batch larger than the capacity was accepted")
	}
}

func TestHead(t *testing.T) {
	s := tinySplit()
	h := s.Head(2)
	if h.N != 2 || len(h.X) != 6 || !slices.Equal(h.Y, []int32{5, 6}) {
		t.Errorf("head: N %d, %d values, labels %v", h.N, len(h.X), h.Y)
	}
	if s.Head(0) != s || s.Head(9) != s {
		t.Error("Head(0) and Head(n+) should return the split itself")
	}
}

func TestStandardize(t *testing.T) {
	// A CIFAR-like set with one example whose every value is 0.5: channel c must become
	// (0.5 − mean_c)/std_c with the published constants.
	x := make([]float32, 3*4)
	for i := range x {
		x[i] = 0.5
	}
	d := &Dataset{Name: "cifar10", Shape: []int{3, 2, 2}, Train: &Split{X: x, N: 1, D: 12}, Preprocessing: []string{"scale-unit"}}
	if err := d.Standardize(); err != nil {
		t.Fatal(err)
	}
	mean := []float64{0.4914, 0.4822, 0.4465}
	std := []float64{0.2470, 0.2435, 0.2616}
	for c := range 3 {
		want := (0.5 - mean[c]) / std[c]
		for j := range 4 {
			if got := float64(x[c*4+j]); math.Abs(got-want) > 1e-6 {
				t.Errorf("channel %d value %d = %v, want %v", c, j, got, want)
			}
		}
	}
	if err := d.Standardize(); err == nil {
		t.Error("standardizing twice succeeded")
	}
	m := &Dataset{Name: "mnist", Shape: []int{1, 1, 2}, Test: &Split{X: []float32{0, 1}, N: 1, D: 2}}
	if err := m.Normalize(NormalizeStandard); err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(m.Test.X[0])+0.1307/0.3081) > 1e-6 || math.Abs(float64(m.Test.X[1])-(1-0.1307)/0.3081) > 1e-6 {
		t.Errorf("MNIST standardized to %v", m.Test.X)
	}
	if err := (&Dataset{Name: SyntheticMixture, Shape: []int{2}}).Standardize(); err == nil {
		t.Error("standardizing a set without published constants succeeded")
	}
}

func TestNormalizeNone(t *testing.T) {
	d := &Dataset{Name: "mnist", Shape: []int{1, 1, 2}, Train: &Split{X: []float32{1, float32(17) / 255}, N: 1, D: 2}, Preprocessing: []string{"scale-unit"}}
	if err := d.Normalize(NormalizeNone); err != nil {
		t.Fatal(err)
	}
	if d.Train.X[0] != 255 || math.Abs(float64(d.Train.X[1])-17) > 1e-5 {
		t.Errorf("raw values %v, want [255 17]", d.Train.X)
	}
	if err := d.Normalize("zscore"); err == nil {
		t.Error("unknown mode accepted")
	}
}

func TestBoundNorm(t *testing.T) {
	// Rows of norm 5 (3,4), 0.5 (0.3,0.4) and 0: only the first must change, to (0.6, 0.8)·r/1.
	s := &Split{X: []float32{3, 4, 0.3, 0.4, 0, 0}, N: 3, D: 2}
	d := &Dataset{Name: "x", Shape: []int{2}, Train: s}
	if err := d.BoundNorm(1); err != nil {
		t.Fatal(err)
	}
	want := []float32{0.6, 0.8, 0.3, 0.4, 0, 0}
	for i, w := range want {
		if math.Abs(float64(s.X[i]-w)) > 1e-6 {
			t.Errorf("X[%d] = %v, want %v", i, s.X[i], w)
		}
	}
	if got := s.MaxNorm(); got > 1 {
		t.Errorf("max norm %v exceeds the bound 1", got)
	}
	if d.Preprocessing[len(d.Preprocessing)-1] != "bound-norm(1)" {
		t.Errorf("preprocessing %v", d.Preprocessing)
	}
	for _, r := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if err := d.BoundNorm(r); err == nil {
			t.Errorf("BoundNorm(%v) succeeded", r)
		}
	}
}
