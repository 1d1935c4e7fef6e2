package train

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/rundir"
)

// A label outside [0, classes) or a split of the wrong width is refused when the trainer is
// built, naming the example's index in its split, before any step runs: nothing is written to
// the run's ledger, so no privacy is spent on data that would fail later.
func TestBadDataIsRefusedBeforeAnyStep(t *testing.T) {
	for _, tc := range []struct {
		name   string
		edit   func(*data.Dataset)
		phrase string
	}{
		{"label", func(d *data.Dataset) { d.Train.Y[57] = 7 }, "train example 57: label 7 is outside [0, 2)"},
		{"width", func(d *data.Dataset) { d.Test.D, d.Test.X = 3, d.Test.X[:3*d.Test.N] }, "test split: rows of 3 values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			split := func(n int) *data.Split {
				s := &data.Split{X: make([]float32, n*4), Y: make([]int32, n), N: n, D: 4}
				for i := range n {
					s.Y[i] = int32(i % 2)
				}
				return s
			}
			ds := &data.Dataset{Name: "blobs", Shape: []int{4}, Classes: 2, Train: split(200), Test: split(50), Source: "memory"}
			tc.edit(ds)
			net, err := models.New(models.Spec{Kind: "mlp", Input: []int{4}, Hidden: []int{8}, Activation: "tanh", Classes: 2}, rand.New(rand.NewPCG(3, 4)))
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "run")
			cfg, err := config.ParseConfig([]byte(`
name: blobs
seed: 1
data: {dataset: blobs, normalize: none}
model: {kind: mlp, hidden: [8]}
optimizer: {algorithm: dp-sgd, update: sgd, learning_rate: 0.5, batch_size: 20, clip_norm: 1, noise_multiplier: 1}
training: {epochs: 1}
privacy: {delta: 1.0e-5, accountants: [rdp]}
`), []string{"output.dir=" + dir})
			if err != nil {
				t.Fatal(err)
			}
			tr, err := New(context.Background(), cfg, Options{Dataset: ds, Model: net})
			if err == nil {
				tr.Close()
				t.Fatal("a damaged dataset was accepted")
			}
			var ee *data.ExampleError
			if !errors.As(err, &ee) || !strings.Contains(err.Error(), tc.phrase) {
				t.Fatalf("got %v, want an ExampleError saying %q", err, tc.phrase)
			}
			if b, err := os.ReadFile(rundir.PrivatePath(dir, rundir.LedgerFile)); err == nil && len(b) > 0 {
				t.Errorf("the ledger holds %d bytes: a step ran on the damaged data", len(b))
			}
		})
	}
}
