package config

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"
)

// FuzzParseConfig: any document and --set argument give a config or an error, never a panic;
// a config that parses has the canonical form (and so the resume hash) of its re-serialised
// copy, as written to the run directory.
func FuzzParseConfig(f *testing.F) {
	files, _ := filepath.Glob("../../configs/*.yaml")
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
		a, _ := Canonicalize(cfg)
		b, _ := Canonicalize(again)
		if a.Hash() != b.Hash() {
			t.Fatalf("the saved form hashes differently: %v", b.Diff(a, again, Builtin()))
		}
	})
}
