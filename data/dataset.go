package data

import (
	"fmt"
	"slices"
)

// Dataset is a classification (or, with Classes == 0, an unlabelled) dataset held in memory as
// float32 rows ready for batching.
type Dataset struct {
	// Name is the dataset's registry name, e.g. "mnist" or "synthetic-mixture".
	Name string
	// Shape is the shape of one example, e.g. [1 28 28] for MNIST, [3 32 32] for CIFAR-10 (CHW)
	// or [d] for feature vectors. Its product is each split's D.
	Shape []int
	// Classes is the number of labels; labels lie in [0, Classes). It is 0 for unlabelled data.
	Classes int
	// Train and Test are the two splits. Either may be nil: a directory holding only the test
	// files yields a nil Train, and the caller decides whether that is enough.
	Train, Test *Split
	// Source says where the data came from: a directory or archive path, or the generator and
	// seed of a synthetic set.
	Source string
	// Preprocessing lists, in order, the transformations applied to X since it was read, e.g.
	// ["scale-unit", "standardize"].
	Preprocessing []string
}

// Split is one split of a dataset: N examples of D float32 features each, stored row-major.
type Split struct {
	// X holds N rows of D values: example i is X[i*D : (i+1)*D].
	X []float32
	// Y holds the N labels, or is nil for unlabelled data.
	Y []int32
	// N is the number of examples and D the number of features of each.
	N, D int
}

// Len returns the number of examples in s; it is 0 for a nil split.
func (s *Split) Len() int {
	if s == nil {
		return 0
	}
	return s.N
}

// Dim returns D, the number of features of each example.
func (s *Split) Dim() int {
	if s == nil {
		return 0
	}
	return s.D
}

// Row returns example i's features; the slice aliases s.X.
func (s *Split) Row(i int) []float32 {
	return s.X[i*s.D : (i+1)*s.D : (i+1)*s.D]
}

// Gather copies the examples whose indices are idx into the first len(idx) rows of x and,
// when y is not nil and s is labelled, their labels into the first len(idx) entries of y.
// It does not allocate: the training loop calls it every step with buffers it owns. Rows of x
// beyond len(idx) are left untouched; see GatherPadded for fixed-shape batches.
func (s *Split) Gather(idx []int, x []float32, y []int32) error {
	if len(x) < len(idx)*s.D {
		return fmt.Errorf("data: gather buffer holds %d values, need %d for %d examples of %d features; allocate a larger buffer", len(x), len(idx)*s.D, len(idx), s.D)
	}
	if y != nil && s.Y != nil && len(y) < len(idx) {
		return fmt.Errorf("data: gather label buffer holds %d labels, need %d; allocate a larger buffer", len(y), len(idx))
	}
	for k, i := range idx {
		if i < 0 || i >= s.N {
			return fmt.Errorf("data: gather index %d at position %d is outside [0, %d)", i, k, s.N)
		}
		copy(x[k*s.D:(k+1)*s.D], s.X[i*s.D:(i+1)*s.D])
		if y != nil && s.Y != nil {
			y[k] = s.Y[i]
		}
	}
	return nil
}

// GatherPadded is Gather for a batch of fixed capacity cap = len(mask): it fills the first
// len(idx) rows as Gather does, zeroes the remaining rows of x[:cap*D] and labels of y[:cap],
// and sets mask to 1 for real rows and 0 for padding. Graphs with a static batch shape use it
// with Poisson sampling, whose batch size varies.
func (s *Split) GatherPadded(idx []int, x []float32, y []int32, mask []float32) error {
	c := len(mask)
	if len(idx) > c {
		return fmt.Errorf("data: batch of %d examples exceeds the padded capacity %d; raise the capacity (a Poisson batch can exceed its mean)", len(idx), c)
	}
	if len(x) < c*s.D {
		return fmt.Errorf("data: padded gather buffer holds %d values, need %d for capacity %d of %d features; allocate a larger buffer", len(x), c*s.D, c, s.D)
	}
	if y != nil && s.Y != nil && len(y) < c {
		return fmt.Errorf("data: padded gather label buffer holds %d labels, need %d; allocate a larger buffer", len(y), c)
	}
	if err := s.Gather(idx, x, y); err != nil {
		return err
	}
	clear(x[len(idx)*s.D : c*s.D])
	if y != nil && s.Y != nil {
		clear(y[len(idx):c])
	}
	for k := range mask {
		if k < len(idx) {
			mask[k] = 1
		} else {
			mask[k] = 0
		}
	}
	return nil
}

// ClassCounts returns how many examples of s carry each label in [0, classes).
func (s *Split) ClassCounts(classes int) []int {
	counts := make([]int, classes)
	if s == nil {
		return counts
	}
	for _, y := range s.Y {
		if int(y) >= 0 && int(y) < classes {
			counts[y]++
		}
	}
	return counts
}

// Dim returns the number of features of one example, the product of d.Shape.
func (d *Dataset) Dim() int {
	p := 1
	for _, s := range d.Shape {
		p *= s
	}
	return p
}

// splits returns the non-nil splits of d.
func (d *Dataset) splits() []*Split {
	var out []*Split
	for _, s := range []*Split{d.Train, d.Test} {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

func (d *Dataset) applied(step string) bool { return slices.Contains(d.Preprocessing, step) }

// Clone returns a deep copy of d: its splits' values and labels are copied, so that
// preprocessing the copy in place leaves d as it was.
func (d *Dataset) Clone() *Dataset {
	c := *d
	c.Shape = slices.Clone(d.Shape)
	c.Preprocessing = slices.Clone(d.Preprocessing)
	c.Train, c.Test = d.Train.Clone(), d.Test.Clone()
	return &c
}

// Clone returns a deep copy of s (nil for a nil split).
func (s *Split) Clone() *Split {
	if s == nil {
		return nil
	}
	return &Split{X: slices.Clone(s.X), Y: slices.Clone(s.Y), N: s.N, D: s.D}
}
