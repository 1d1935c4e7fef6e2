package data

import (
	"bytes"
	"testing"
)

// The readers must turn any byte string into a dataset or an error: no panic, and no
// allocation beyond what the input holds (a crafted header cannot exhaust memory).

func FuzzDecodeIDX(f *testing.F) {
	f.Add(idxBytes([]int{2, 3, 3}, make([]byte, 18)), uint8(3))
	f.Add(idxBytes([]int{4}, []byte{1, 2, 3, 4}), uint8(1))
	f.Add(gzipBytes(f, idxBytes([]int{1, 2, 2}, []byte{9, 8, 7, 6})), uint8(3))
	f.Add(idxBytes([]int{60000, 28, 28}, nil), uint8(3)) // a header announcing 47 MB, no data
	f.Fuzz(func(t *testing.T, b []byte, ndims uint8) {
		nd := 1 + int(ndims%3)
		got, err := decodeIDX(bytes.NewReader(b), "fuzz", "mnist", "images", nd)
		if err != nil {
			return
		}
		n := 1
		for _, d := range got.dims {
			n *= d
		}
		if len(got.dims) != nd || len(got.data) != n {
			t.Fatalf("dims %v with %d bytes of data", got.dims, len(got.data))
		}
	})
}

func FuzzDecodeCIFAR(f *testing.F) {
	f.Add(cifarBatch(0, 2))
	f.Add(cifarBatch(3, 1)[:100])
	f.Fuzz(func(t *testing.T, b []byte) {
		x, y, err := decodeCIFAR(b, "fuzz.bin")
		if err != nil {
			return
		}
		if len(x) != len(y)*cifarPixels {
			t.Fatalf("%d labels with %d pixel values", len(y), len(x))
		}
		for _, l := range y {
			if l < 0 || l > 9 {
				t.Fatalf("label %d outside 0..9", l)
			}
		}
	})
}

func FuzzCIFARArchive(f *testing.F) {
	f.Add(tarGz(f, cifarFiles(2), nil))
	f.Add(tarGz(f, map[string][]byte{cifarTestFile: cifarBatch(0, 1)}, map[string]string{"readme.html": "hi"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := readCIFAR10Archive(bytes.NewReader(b), "fuzz.tar.gz")
		if err != nil {
			return
		}
		for _, s := range []*Split{d.Train, d.Test} {
			if s != nil && s.Len() > 0 && (s.D != cifarPixels || len(s.X) != s.Len()*s.D) {
				t.Fatalf("split of %d examples of %d values, %d stored", s.Len(), s.D, len(s.X))
			}
		}
	})
}
