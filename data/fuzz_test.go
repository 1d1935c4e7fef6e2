package data

import (
	"bytes"
	"math/rand/v2"
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

// FuzzSamplerState restores every scheme's sampler from damaged and hostile state bytes,
// seeded with each scheme's real state after a few draws. Whatever it reads, it never panics;
// a state it accepts draws valid batches (indices in range, the step it was restored at) and
// encodes to a state that a fresh sampler accepts and encodes the same way.
func FuzzSamplerState(f *testing.F) {
	const n, b = 40, 8
	schemes := []Scheme{SchemePoisson, SchemePoissonWithRejection, SchemeFull, SchemeShuffled, SchemeShuffledOnce, SchemeWithoutReplacement}
	fresh := func(i int) *Sampler {
		min := 0
		if schemes[i] == SchemePoissonWithRejection {
			min = 2
		}
		s, err := NewSampler(schemes[i], n, b, min, rand.New(rand.NewPCG(1, uint64(i))))
		if err != nil {
			f.Fatal(err)
		}
		return s
	}
	for i := range schemes {
		s := fresh(i)
		for range 7 {
			s.Next(nil)
		}
		state, err := s.MarshalBinary()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), state)
		f.Add(uint8(i), state[:len(state)-1])
	}
	f.Add(uint8(0), []byte{})
	f.Fuzz(func(t *testing.T, which uint8, state []byte) {
		i := int(which) % len(schemes)
		s := fresh(i)
		if err := s.UnmarshalBinary(state); err != nil {
			return
		}
		step := s.Drawn()
		if step < 0 {
			t.Fatalf("%s: restored at step %d", schemes[i], step)
		}
		again, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		batch, info := s.Next(nil)
		if info.Step() != step {
			t.Fatalf("%s: restored at step %d, drew step %d", schemes[i], step, info.Step())
		}
		for _, k := range batch {
			if k < 0 || k >= n {
				t.Fatalf("%s: drew index %d of %d examples", schemes[i], k, n)
			}
		}
		r := fresh(i)
		if err := r.UnmarshalBinary(again); err != nil {
			t.Fatalf("%s: a fresh sampler refuses the state its twin encoded: %v", schemes[i], err)
		}
		if twice, _ := r.MarshalBinary(); !bytes.Equal(twice, again) {
			t.Fatalf("%s: the state encodes differently after a round trip", schemes[i])
		}
	})
}
