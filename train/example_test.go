package train_test

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/config"
)

// The YAML trainer runs on a caller's own in-memory dataset and own network: Options.Dataset
// and Options.Model stand in for data.dataset and the model section, and everything else
// (sampling, clipping, noise, the live accountants, the stop before the target ε, the run
// directory) is the config's. Seeded, so reproducible and NOT private.
func ExampleNew_ownDataAndModel() {
	// Two Gaussian blobs in 4 dimensions, 2,000 training and 500 test examples.
	rng := rand.New(rand.NewPCG(1, 2))
	split := func(n int) *data.Split {
		s := &data.Split{X: make([]float32, n*4), Y: make([]int32, n), N: n, D: 4}
		for i := range n {
			s.Y[i] = int32(i % 2)
			for j := range 4 {
				s.X[i*4+j] = float32(rng.NormFloat64() + 1.5*float64(2*s.Y[i]-1))
			}
		}
		return s
	}
	ds := &data.Dataset{Name: "blobs", Shape: []int{4}, Classes: 2, Train: split(2000), Test: split(500), Source: "memory"}
	net, err := models.New(models.Spec{Kind: "mlp", Input: []int{4}, Hidden: []int{8}, Activation: "tanh", Classes: 2}, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		log.Fatal(err)
	}

	dir, err := os.MkdirTemp("", "dptrain-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	cfg, err := config.ParseConfig([]byte(`
name: blobs
seed: 1
data: {dataset: blobs, normalize: none}
model: {kind: mlp, hidden: [8]}
optimizer: {algorithm: dp-sgd, update: sgd, learning_rate: 0.5, batch_size: 100, clip_norm: 1, noise_multiplier: auto}
training: {epochs: 5}
privacy: {target_epsilon: 1, delta: 1.0e-5, accountants: [rdp, pld]}
`), []string{"output.dir=" + filepath.Join(dir, "run")})
	if err != nil {
		log.Fatal(err)
	}
	tr, err := train.New(context.Background(), cfg, train.Options{Dataset: ds, Model: net})
	if err != nil {
		log.Fatal(err)
	}
	sum, err := tr.Run(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d steps on %s, test accuracy above 0.9: %v\n", sum.Steps, sum.Dataset, sum.TestAccuracy > 0.9)
	for _, e := range sum.Epsilon {
		fmt.Printf("ε[%s] = %.2f (%s)\n", e.Mode, e.Epsilon, e.Label)
	}
	// Output:
	// 100 steps on blobs, test accuracy above 0.9: true
	// ε[rdp] = 1.00 (certified)
	// ε[pld] = 0.90 (certified)
}
