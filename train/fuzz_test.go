package train

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/dptrain/dptrain/accounting"
)

// FuzzParseConfig: any document and --set argument give a config or an error, never a panic;
// a config that parses has the canonical form (and so the resume hash) of its re-serialised
// copy, as written to the run directory.
func FuzzParseConfig(f *testing.F) {
	files, _ := filepath.Glob("../configs/*.yaml")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "training.steps=3")
	}
	f.Add([]byte(synthetic), "optimizer.batch_size=1.5")
	f.Add([]byte(minimal), "model.layers=[{type: dense, out: 3}]")
	f.Add([]byte(minimal), "privacy.accountants=[rdp, pdl]")
	f.Fuzz(func(t *testing.T, doc []byte, set string) {
		cfg, err := ParseConfig(doc, []string{set})
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := yaml.NewEncoder(&buf).Encode(cfg); err != nil {
			t.Fatalf("a parsed config does not serialise: %v", err)
		}
		again, err := ParseConfig(buf.Bytes(), nil)
		if err != nil {
			t.Fatalf("the saved form of a valid config does not parse: %v\n%s", err, buf.Bytes())
		}
		a, _ := canonicalize(cfg)
		b, _ := canonicalize(again)
		if a.Hash() != b.Hash() {
			t.Fatalf("the saved form hashes differently: %v", b.Diff(a, again, Builtin()))
		}
	})
}

// FuzzDecodeCheckpoint: any bytes give a checkpoint or an error, never a panic or an
// allocation beyond the file's size.
func FuzzDecodeCheckpoint(f *testing.F) {
	path := filepath.Join(f.TempDir(), "c.dpt")
	c := &Checkpoint{
		Header: CheckpointHeader{Step: 3, ConfigHash: "ab", Config: Canonical{"name": "x"}, NoiseMultiplier: 1,
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
