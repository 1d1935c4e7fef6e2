package toyalg_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/algorithm/internal/toyalg"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/config"
)

const toyConfig = `
name: toy
seed: 5
data:
  dataset: synthetic-mixture
  normalize: none
model:
  kind: mlp
  hidden: [16]
optimizer:
  algorithm: toy-gd
  learning_rate: 0.1
  batch_size: 240
  clip_norm: 1
  noise_multiplier: 1.5
  toy_gd:
    scale: 2
privacy:
  delta: 1.0e-5
training:
  steps: 20
`

// TestOneDirectoryOneLine registers the toy, an algorithm that is one directory, on the
// trainer's registry with one line, and trains it end to end from a config: its section is
// decoded and checked by its own registration, and its run reports the ε of its own records,
// which are DP-SGD's for the same σ, C and sampling.
func TestOneDirectoryOneLine(t *testing.T) {
	reg := config.Builtin()
	if err := reg.Register(toyalg.Algorithm()); err != nil { // the one registration line
		t.Fatal(err)
	}
	if _, err := reg.ParseConfig([]byte(toyConfig), []string{"optimizer.toy_gd.scale=0"}); err == nil || !strings.Contains(err.Error(), "optimizer.toy_gd.scale = 0") {
		t.Errorf("the toy's own validation did not run: %v", err)
	}
	run := func(reg *config.Algorithms, doc string) *train.Summary {
		t.Helper()
		cfg, err := reg.ParseConfig([]byte(doc), []string{"output.dir=" + t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := train.New(context.Background(), cfg, train.Options{Algorithms: reg})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		sum, err := tr.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	toy := run(reg, toyConfig)
	dpsgd := strings.NewReplacer("algorithm: toy-gd", "algorithm: dp-sgd", "  toy_gd:\n    scale: 2\n", "").Replace(toyConfig)
	dp := run(config.Builtin(), dpsgd)
	if toy.Steps != 20 || len(toy.Epsilon) == 0 || math.IsNaN(toy.Epsilon[0].Epsilon) {
		t.Fatalf("toy run: %d steps, ε %+v", toy.Steps, toy.Epsilon)
	}
	if toy.Epsilon[0].Epsilon != dp.Epsilon[0].Epsilon {
		t.Errorf("toy ε = %v, DP-SGD ε = %v: the same records must give the same ε", toy.Epsilon[0].Epsilon, dp.Epsilon[0].Epsilon)
	}
}
