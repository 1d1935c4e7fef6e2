package data

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// idxSplitFiles names the two file stems of each IDX split.
var idxSplitFiles = []struct{ split, images, labels string }{
	{"train", "train-images-idx3-ubyte", "train-labels-idx1-ubyte"},
	{"test", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"},
}

// findIDX returns the path of the IDX file with the given stem in dir, trying the compressed
// name first, then the raw one and LeCun's dotted spelling ("train-images.idx3-ubyte").
func findIDX(dir, stem string) (string, bool) {
	dotted := strings.Replace(stem, "-idx", ".idx", 1)
	for _, name := range []string{stem + ".gz", stem, dotted, dotted + ".gz"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, true
		}
	}
	return "", false
}

// hasIDX reports whether dir holds any file of an IDX dataset.
func hasIDX(dir string) bool {
	for _, s := range idxSplitFiles {
		if _, ok := findIDX(dir, s.images); ok {
			return true
		}
		if _, ok := findIDX(dir, s.labels); ok {
			return true
		}
	}
	return false
}

// ReadIDXDir reads the IDX dataset described by spec (MNIST or Fashion-MNIST) from dir, which
// holds train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and
// t10k-labels-idx1-ubyte.gz (each gzip-compressed or raw). Either split may be absent: a
// directory holding only the t10k files gives a Dataset with a nil Train. Pixels are scaled to
// [0, 1].
func ReadIDXDir(dir string, spec Spec) (*Dataset, error) {
	if spec.Format != FormatIDX {
		return nil, fmt.Errorf("data: %s is stored as %s, not IDX", spec.Name, spec.Format)
	}
	if len(spec.Shape) != 3 || spec.Shape[0] != 1 {
		return nil, fmt.Errorf("data: spec %s has shape %v, want [1 rows cols] for IDX images", spec.Name, spec.Shape)
	}
	d := &Dataset{
		Name:          spec.Name,
		Shape:         append([]int(nil), spec.Shape...),
		Classes:       spec.Classes,
		Source:        dir,
		Preprocessing: []string{"scale-unit"},
	}
	for _, sf := range idxSplitFiles {
		img, okImg := findIDX(dir, sf.images)
		lab, okLab := findIDX(dir, sf.labels)
		switch {
		case !okImg && !okLab:
			continue
		case !okLab:
			return nil, &FileError{Path: dir, Problem: fmt.Sprintf("found %s but not its labels %s.gz", filepath.Base(img), sf.labels), Hint: "download the missing file (dptrain data download --dataset " + spec.Name + ")"}
		case !okImg:
			return nil, &FileError{Path: dir, Problem: fmt.Sprintf("found %s but not its images %s.gz", filepath.Base(lab), sf.images), Hint: "download the missing file (dptrain data download --dataset " + spec.Name + ")"}
		}
		s, err := readIDXSplit(img, lab, spec.Name, spec.Shape[1], spec.Shape[2], spec.Classes)
		if err != nil {
			return nil, err
		}
		if sf.split == "train" {
			d.Train = s
		} else {
			d.Test = s
		}
	}
	if d.Train == nil && d.Test == nil {
		return nil, &FileError{Path: dir, Problem: fmt.Sprintf("no %s files: want %s.gz and %s.gz, and/or %s.gz and %s.gz",
			spec.Name, idxSplitFiles[0].images, idxSplitFiles[0].labels, idxSplitFiles[1].images, idxSplitFiles[1].labels),
			Hint: "download them (dptrain data download --dataset " + spec.Name + ")"}
	}
	return d, nil
}
