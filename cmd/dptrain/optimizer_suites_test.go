package main

import (
	"math"
	"testing"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/sweep"
	"github.com/dptrain/dptrain/train"
)

// optimizerSuitesCISized shrinks the optimizers-fmnist-eps, optimizers-mnist and
// optimizers-cifar10 suites to a CI-sized run: 1024 training and 256 test examples, batch 256
// (above DP-ULR's rejection threshold of 250), 2 steps, no evaluation or checkpoint on the way.
var optimizerSuitesCISized = []string{"data.train_subset=1024", "data.test_subset=256", "optimizer.batch_size=256",
	"training.steps=2", "training.eval_every=0", "training.checkpoint_every=0"}

// TestOptimizerSuitesCISized plans each every-optimizer suite in its CI-sized form (every one of
// its 6 algorithms × 3 ε × 3 seeds cells validates) and runs the ε = 3, seed 1 cell of each
// algorithm: 2 steps, a test accuracy, and the stop accountant the suite's comments promise with
// its label and an ε within the target — RDP (certified) for DP-SGD, ModelMix and DP-SGLD, ulr
// (certified) for DP-ULR, mbcd (paper) for DP-MBCD. Each suite is skipped, naming the command
// that gets its data, where its dataset is not installed. Accuracy is only required to be a
// number: the JPEG copy's archive is stored class by class and data.train_subset takes the first
// examples, so the CIFAR subset holds airplanes alone.
func TestOptimizerSuitesCISized(t *testing.T) {
	stop := map[string]struct{ mode, label string }{
		"dp-sgd":            {"rdp", "certified"},
		"dp-sgd-scatternet": {"rdp", "certified"},
		"modelmix":          {"rdp", "certified"},
		"dp-sgld":           {"rdp", "certified"},
		"dp-mbcd":           {"mbcd", "paper"},
		"dp-ulr":            {"ulr", "certified"},
	}
	// Every suite is planned, which builds every cell's config; the cells run where their
	// configs are run nowhere else: the Fashion-MNIST and MNIST suites' configs are those
	// TestOptimizersFMNISTCISized and TestEveryShippedConfigResumesFromItsSavedConfig train.
	for _, tc := range []struct {
		suite, dataset, get string
		run                 bool
	}{
		{"optimizers-fmnist-eps", "fashion-mnist", "apt-get install dataset-fashion-mnist, or dptrain data download --dataset fashion-mnist", false},
		{"optimizers-mnist", "mnist", "dptrain data download --dataset mnist", false},
		{"optimizers-cifar10", "cifar10-jpeg", "dptrain data download --dataset cifar10-jpeg --from DIR, DIR holding cifar10-jpeg.tar.gz", true},
	} {
		t.Run(tc.suite, func(t *testing.T) {
			requireDataset(t, tc.dataset, tc.get)
			p := planSuiteOn(t, tc.suite, optimizerSuitesCISized)
			if n := len(p.Cells); n != 6*3*3 {
				t.Fatalf("%d cells, want 54 (6 algorithms × 3 ε × 3 seeds)", n)
			}
			if !tc.run {
				return
			}
			ran := 0
			for i, c := range p.Cells {
				if c.Label("epsilon") != "3" || c.Label(sweep.SeedAxis) != "1" {
					continue
				}
				ran++
				alg := c.Label("algorithm")
				want, ok := stop[alg]
				if !ok {
					t.Errorf("cell %s: algorithm %q has no expected stop accountant here", c.ID, alg)
					continue
				}
				sum, err := sweep.RunCell(t.Context(), p, i, train.Options{})
				if err != nil {
					t.Errorf("cell %s: %v", c.ID, err)
					continue
				}
				if sum.Steps != 2 || math.IsNaN(sum.TestAccuracy) {
					t.Errorf("cell %s: %d steps, accuracy %v; want 2 steps and an accuracy", c.ID, sum.Steps, sum.TestAccuracy)
				}
				if sum.StopAccountant != want.mode {
					t.Errorf("cell %s: stopped under %q, want %s", c.ID, sum.StopAccountant, want.mode)
				}
				found := false
				for _, e := range sum.Epsilon {
					if e.Mode != want.mode {
						continue
					}
					found = true
					if e.Error != "" || !(e.Epsilon > 0) || e.Epsilon > 3 || string(e.Label) != want.label {
						t.Errorf("cell %s: ε[%s] %+v, want %s and at most the target 3", c.ID, e.Mode, e, want.label)
					}
				}
				if !found {
					t.Errorf("cell %s: no ε under its stop accountant %s", c.ID, want.mode)
				}
			}
			if ran != len(stop) {
				t.Errorf("ran %d cells, want one per algorithm (%d)", ran, len(stop))
			}
		})
	}
}
