package main

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/sweep"
	"github.com/dptrain/dptrain/train"
)

// dpmbcdCISized shrinks benchmarks/suites/dpmbcd-table3.yaml to a CI-sized run: 600 training
// examples in 6 batches of 100, one epoch, 500 test examples, hidden width 64.
var dpmbcdCISized = []string{"data.train_subset=600", "data.test_subset=500", "optimizer.batch_size=100",
	"training.epochs=1", "model.hidden=[64,64,64]"}

// TestDPMBCDTable3CISized plans the DP-MBCD Table 3 suite on real Fashion-MNIST in a CI-sized
// form (every cell's config parses and validates) and runs its summed and mean DP-MBCD MLP
// cells at the paper's o = 0.001: both are labelled paper, and the summed update, whose
// records declare its true sensitivity, pays b² = 10⁴ times the mean's per-step increment
// (ε above 100 against below 1).
func TestDPMBCDTable3CISized(t *testing.T) {
	p := planCISuite(t, "dpmbcd-table3", dpmbcdCISized)
	if n := len(p.Cells); n != 2*2*3*3 {
		t.Fatalf("%d cells, want 36 (2 datasets × 2 models × 3 algorithms × 3 seeds)", n)
	}
	eps := map[string]float64{}
	for _, prefix := range []string{"fashion-mnist_mlp_dp-mbcd-sum_", "fashion-mnist_mlp_dp-mbcd-mean_"} {
		cell := -1
		for i, c := range p.Cells {
			if strings.HasPrefix(c.ID, prefix) {
				cell = i
				break
			}
		}
		if cell < 0 {
			t.Fatalf("no cell %s*", prefix)
		}
		sum, err := sweep.RunCell(context.Background(), p, cell, train.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Steps != 6 || sum.BatchSize != 100 || math.IsNaN(sum.TestAccuracy) {
			t.Errorf("%s: %d steps, b = %d, accuracy %v; want 6 steps of b = 100", prefix, sum.Steps, sum.BatchSize, sum.TestAccuracy)
		}
		for _, e := range sum.Epsilon {
			if e.Mode != "mbcd" || e.Error != "" || !(e.Epsilon > 0) || e.Label != "paper" {
				t.Errorf("%s: ε[%s] %+v, want one positive mbcd ε labelled paper", prefix, e.Mode, e)
			}
			eps[prefix] = e.Epsilon
		}
	}
	summed, mean := eps["fashion-mnist_mlp_dp-mbcd-sum_"], eps["fashion-mnist_mlp_dp-mbcd-mean_"]
	t.Logf("ε(δ = 1e-5, mbcd): summed %.4g, mean %.4g", summed, mean)
	if !(summed > 100 && mean < 1) {
		t.Errorf("ε summed %v, mean %v: want the summed update's true sensitivity to cost ε > 100 and the mean's ε < 1", summed, mean)
	}
}
