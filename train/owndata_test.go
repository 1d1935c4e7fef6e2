package train

import (
	"slices"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/train/config"
)

// A caller's dataset goes through the configured preprocessing on a copy: the caller's
// values are left as they were, and a dataset whose shape the model does not take is refused
// by name.
func TestOwnDatasetIsPreprocessedOnACopy(t *testing.T) {
	ds, err := (&data.Locator{}).Load(t.Context(), "synthetic-mixture")
	if err != nil {
		t.Fatal(err)
	}
	before := slices.Clone(ds.Train.X)
	parse := func(sets ...string) *config.Config {
		cfg, err := config.ParseConfig([]byte(synthetic), append(sets, "output.dir="+t.TempDir(), "training.steps=3"))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := parse("data.feature_norm=0.5")
	tr, err := New(t.Context(), cfg, Options{Dataset: ds})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, ds.Train.X) {
		t.Error("training on Options.Dataset changed the caller's examples")
	}
	if slices.Equal(tr.train.X[:len(before)], before) {
		t.Error("data.feature_norm was not applied to Options.Dataset")
	}

	wrong := ds.Clone()
	wrong.Shape = []int{ds.Train.D + 1}
	wrong.Train.D, wrong.Test.D = ds.Train.D+1, ds.Test.D+1
	wrong.Train.X, wrong.Test.X = make([]float32, wrong.Train.N*wrong.Train.D), make([]float32, wrong.Test.N*wrong.Test.D)
	m := tr.model
	_, err = New(t.Context(), parse(), Options{Dataset: wrong, Model: m})
	if err == nil || !strings.Contains(err.Error(), "input") {
		t.Errorf("a model that does not take the dataset's examples: %v", err)
	}
}
