package data

import (
	"fmt"
	"math"
)

// ExampleError says which example of a dataset is unusable and why: a label outside
// [0, Classes), a row of the wrong width, a split whose sizes disagree. It names the example's
// index in its split, so that the file can be fixed; it is returned before any step has run on
// the data, so no privacy is spent on a dataset that would fail later.
type ExampleError struct {
	Dataset string
	Split   string // "train" or "test"
	Index   int    // the example's index in its split; -1 for the split as a whole
	Problem string
}

func (e *ExampleError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("data: %s %s split: %s", e.Dataset, e.Split, e.Problem)
	}
	return fmt.Sprintf("data: %s %s example %d: %s", e.Dataset, e.Split, e.Index, e.Problem)
}

// Check returns an *ExampleError for the first unusable example of each split: a split whose
// X does not hold N rows of the dataset's D = ∏Shape values, or whose Y does not hold N labels,
// and a label outside [0, Classes). Non-finite inputs are allowed (an example whose gradient is
// not finite is clipped to zero in every step, and counted); NonFinite counts them.
func (d *Dataset) Check() error {
	dim := 1
	for _, s := range d.Shape {
		dim *= s
	}
	for _, sp := range []struct {
		name string
		s    *Split
	}{{"train", d.Train}, {"test", d.Test}} {
		s := sp.s
		if s == nil {
			continue
		}
		bad := func(i int, format string, a ...any) error {
			return &ExampleError{Dataset: d.Name, Split: sp.name, Index: i, Problem: fmt.Sprintf(format, a...)}
		}
		switch {
		case len(d.Shape) > 0 && s.D != dim:
			return bad(-1, "rows of %d values, but the dataset's examples have shape %v (%d values): the files do not match the dataset", s.D, d.Shape, dim)
		case s.N < 0 || len(s.X) != s.N*s.D:
			return bad(-1, "%d values for %d examples of %d: the split is truncated or padded", len(s.X), s.N, s.D)
		case d.Classes > 0 && len(s.Y) != s.N:
			return bad(-1, "%d labels for %d examples: the label file does not match the images", len(s.Y), s.N)
		}
		if d.Classes <= 0 {
			continue
		}
		for i, y := range s.Y {
			if y < 0 || int(y) >= d.Classes {
				return bad(i, "label %d is outside [0, %d): the labels are damaged or belong to another dataset; fix the label file (or data.dir)", y, d.Classes)
			}
		}
	}
	return nil
}

// NonFinite returns how many examples of s have a NaN or infinite input value: each is clipped
// to zero in every step it is sampled in, so it contributes nothing to training.
func (s *Split) NonFinite() int {
	if s == nil {
		return 0
	}
	n := 0
	for i := 0; i < s.N; i++ {
		for _, v := range s.Row(i) {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				n++
				break
			}
		}
	}
	return n
}
