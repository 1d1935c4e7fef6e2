package config

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"gopkg.in/yaml.v3"
)

// The config a run saves (every key written out, absent lists as []) has the canonical form,
// and so the hash, of the config it was started from.
func TestSavedConfigHasTheSameHash(t *testing.T) {
	files, _ := filepath.Glob("../../configs/*.yaml")
	srcs := [][]byte{[]byte(synthetic)}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs = append(srcs, b)
	}
	for _, src := range srcs {
		cfg, err := ParseConfig(src, []string{"output.dir=/tmp/x"})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := yaml.NewEncoder(&buf).Encode(cfg); err != nil {
			t.Fatal(err)
		}
		saved, err := ParseConfig(buf.Bytes(), nil)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := Canonicalize(cfg)
		b, _ := Canonicalize(saved)
		if a.Hash() != b.Hash() {
			t.Errorf("hash of the saved config %s differs from the original's %s; diff %v", b.Hash(), a.Hash(), b.Diff(a, saved, Builtin()))
		}
	}
}

func TestCanonicalDiffClassifiesKeys(t *testing.T) {
	cases := []struct {
		name string
		sets []string
		want []KeyChange
	}{
		{"cadences and places are free", []string{"training.eval_every=7", "training.log_every=3", "output.dir=/elsewhere", "name=other"}, nil},
		{"explicit default equals absent", []string{"model.bias=true", "optimizer.schedule.kind=constant", "model.layers=[]"}, nil},
		{"learning rate of dp-sgd with rdp", []string{"optimizer.learning_rate=0.05"},
			[]KeyChange{{Key: "optimizer.learning_rate", Old: "0.2", New: "0.05", Kind: Changeable}}},
		{"run length", []string{"training.steps=60"}, []KeyChange{{Key: "training.steps", Old: "30", New: "60", Kind: Changeable}}},
		{"clip norm is fixed", []string{"optimizer.clip_norm=2"}, []KeyChange{{Key: "optimizer.clip_norm", Old: "1", New: "2", Kind: Fixed}}},
		{"bias off differs from the default", []string{"model.bias=false"}, []KeyChange{{Key: "model.bias", Old: "true", New: "", Kind: Fixed}}},
		{"a step-size-reading accountant fixes the learning rate", []string{"privacy.accountants=[rdp, chien-li]", "optimizer.learning_rate=0.05"},
			[]KeyChange{{Key: "optimizer.learning_rate", Old: "0.2", New: "0.05", Kind: Fixed}, {Key: "privacy.accountants", Old: "[rdp]", New: "[rdp, chien-li]", Kind: Fixed}}},
	}
	base, err := ParseConfig([]byte(synthetic), nil)
	if err != nil {
		t.Fatal(err)
	}
	old, _ := Canonicalize(base)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(synthetic), c.sets)
			if err != nil {
				t.Fatal(err)
			}
			now, _ := Canonicalize(cfg)
			got := now.Diff(old, cfg, Builtin())
			if !slices.Equal(got, c.want) {
				t.Errorf("diff %v, want %v", got, c.want)
			}
			if (len(got) == 0) != (now.Hash() == old.Hash()) {
				t.Errorf("hash equality %v disagrees with an empty diff %v", now.Hash() == old.Hash(), got)
			}
		})
	}
}
