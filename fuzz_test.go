package dptrain

import (
	"bytes"
	"testing"
)

// FuzzReadCheckpoint feeds ReadCheckpoint damaged and hostile bytes, seeded with a real
// checkpoint of a session half-way through its run. Whatever it reads, it never panics, and a
// checkpoint it accepts is either refused by Restore with an error or restores a session that
// still refuses to give back privacy: its ledger never holds fewer steps than the ones
// restored from.
func FuzzReadCheckpoint(f *testing.F) {
	x, y := testData(120, 2)
	cfg := baseConfig()
	cfg.Steps = 10
	s, err := MakePrivate(&meanModel{w: make([]float32, 2)}, x, y, cfg)
	if err != nil {
		f.Fatal(err)
	}
	for range 3 {
		if _, err := s.Step(); err != nil {
			f.Fatal(err)
		}
	}
	c, err := s.Checkpoint()
	if err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		f.Fatal(err)
	}
	good := buf.Bytes()
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{})
	flipped := bytes.Clone(good)
	flipped[len(flipped)-5] ^= 0x40
	f.Add(flipped)

	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ReadCheckpoint(bytes.NewReader(b))
		if err != nil {
			return
		}
		r, err := MakePrivate(&meanModel{w: make([]float32, 2)}, x, y, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Restore(c); err != nil {
			return
		}
		if got, want := ledgerSteps(r.Ledger()), ledgerSteps(c.Ledger); got < want {
			t.Fatalf("restored session's ledger holds %d steps, the checkpoint's %d", got, want)
		}
		if _, err := r.Step(); err != nil {
			return
		}
	})
}
