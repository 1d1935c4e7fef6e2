package rundir

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/train/config"
)

// FuzzDecodeCheckpoint: any bytes give a checkpoint or an error, never a panic or an
// allocation beyond the file's size.
func FuzzDecodeCheckpoint(f *testing.F) {
	path := filepath.Join(f.TempDir(), "c.dpt")
	c := &Checkpoint{
		Header: CheckpointHeader{Step: 3, ConfigHash: "ab", Config: config.Canonical{"name": "x"}, NoiseMultiplier: 1,
			Ledger: []accounting.Step{{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: 1, SampleRate: 0.1, Count: 3}}},
		Vectors: map[string][]float32{"params": {1, 2, 3}, "optim/m": {0.5}},
	}
	if err := SaveCheckpoint(path, c); err != nil {
		f.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	f.Add(b)
	f.Add(b[:len(b)-1])
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := DecodeCheckpoint(b, "fuzz")
		if err != nil {
			return
		}
		for _, vi := range c.Header.Vectors {
			if len(c.Vectors[vi.Name]) != vi.Len {
				t.Fatalf("vector %s: %d values, header says %d", vi.Name, len(c.Vectors[vi.Name]), vi.Len)
			}
		}
	})
}
