package data

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestDatasetCheck(t *testing.T) {
	good := func() *Dataset {
		return &Dataset{Name: "toy", Shape: []int{1, 2, 2}, Classes: 3,
			Train: &Split{X: make([]float32, 5*4), Y: []int32{0, 1, 2, 1, 0}, N: 5, D: 4},
			Test:  &Split{X: make([]float32, 2*4), Y: []int32{2, 2}, N: 2, D: 4}}
	}
	for _, tc := range []struct {
		name   string
		edit   func(*Dataset)
		split  string
		index  int
		phrase string
	}{
		{"label too large", func(d *Dataset) { d.Train.Y[3] = 3 }, "train", 3, "label 3 is outside [0, 3)"},
		{"negative label", func(d *Dataset) { d.Test.Y[1] = -1 }, "test", 1, "label -1 is outside"},
		{"wrong width", func(d *Dataset) { d.Train.D, d.Train.X = 3, make([]float32, 15) }, "train", -1, "rows of 3 values"},
		{"truncated", func(d *Dataset) { d.Test.X = d.Test.X[:7] }, "test", -1, "7 values for 2 examples"},
		{"missing labels", func(d *Dataset) { d.Train.Y = d.Train.Y[:4] }, "train", -1, "4 labels for 5 examples"},
	} {
		d := good()
		if err := d.Check(); err != nil {
			t.Fatalf("a good dataset: %v", err)
		}
		tc.edit(d)
		err := d.Check()
		var ee *ExampleError
		if !errors.As(err, &ee) || ee.Split != tc.split || ee.Index != tc.index || !strings.Contains(err.Error(), tc.phrase) {
			t.Errorf("%s: %v, want an ExampleError for %s example %d saying %q", tc.name, err, tc.split, tc.index, tc.phrase)
		}
	}
	d := good()
	d.Train.X[5] = float32(math.NaN())
	d.Train.X[17] = float32(math.Inf(1))
	if err := d.Check(); err != nil {
		t.Errorf("non-finite inputs are clipped to zero, not refused: %v", err)
	}
	if n := d.Train.NonFinite(); n != 2 {
		t.Errorf("NonFinite = %d, want 2", n)
	}
}
