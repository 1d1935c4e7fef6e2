package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

func TestCheckpointRoundTripAndCorruption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "checkpoint.dpt")
	want := &Checkpoint{
		Header: CheckpointHeader{Step: 42, ConfigHash: "abc", NoiseMultiplier: 1.1,
			Ledger: []accounting.Step{{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: 1.1, SampleRate: 0.01, Count: 42}},
			State:  map[string]float64{"adam_t": 42}},
		Vectors: map[string][]float32{"params": make([]float32, 10000), "m": {1, -2, 3.5}},
	}
	for i := range want.Vectors["params"] {
		want.Vectors["params"][i] = float32(i) * 0.5
	}
	if err := SaveCheckpoint(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := LoadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Header.Step != 42 || got.Header.Ledger[0].Count != 42 || got.Header.State["adam_t"] != 42 {
		t.Errorf("header %+v", got.Header)
	}
	for name, v := range want.Vectors {
		g := got.Vectors[name]
		if len(g) != len(v) {
			t.Fatalf("%s: len %d want %d", name, len(g), len(v))
		}
		for i := range v {
			if g[i] != v[i] {
				t.Fatalf("%s[%d] = %v want %v", name, i, g[i], v[i])
			}
		}
	}

	b, _ := os.ReadFile(path)
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"truncated", b[:len(b)/2], "SHA-256 mismatch"},
		{"flipped", append(append([]byte{}, b[:100]...), append([]byte{b[100] ^ 1}, b[101:]...)...), "SHA-256 mismatch"},
		{"not a checkpoint", []byte("hello world, this is not a checkpoint at all, no no no"), "bad magic"},
	} {
		p := filepath.Join(t.TempDir(), tc.name)
		os.WriteFile(p, tc.data, 0o644)
		if _, err := LoadCheckpoint(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
