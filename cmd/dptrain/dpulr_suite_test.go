package main

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/sweep"
	"github.com/dptrain/dptrain/train"
)

// dpulrCISized shrinks benchmarks/suites/dpulr-table1.yaml to a CI-sized run: 5000 training
// examples (q = 0.1 at B = 500: the printed bound of Feng et al.'s Theorem 3.5, the
// ulr-simplified accountant, needs q ≤ 1/5), 1000 test examples, 8 steps.
var dpulrCISized = []string{"data.train_subset=5000", "data.test_subset=1000", "training.steps=8"}

// TestDPULRTable1CISized plans the DP-ULR Table 1 suite on real Fashion-MNIST in a CI-sized form
// (every cell's config parses and validates) and runs its B = 500, σ0 = 8 DP-ULR cell in paper
// mode with optimizer.dp_ulr's defaults (a fixed σ_l = 1, K = 16): 8 steps, ε labelled paper
// under both ulr accountants.
func TestDPULRTable1CISized(t *testing.T) {
	p := planCISuite(t, "dpulr-table1", dpulrCISized)
	if n := len(p.Cells); n != 3*3*3*3 {
		t.Fatalf("%d cells, want 81 (3 batch sizes × 3 σ0 × 3 algorithms × 3 seeds)", n)
	}
	cell := -1
	for i, c := range p.Cells {
		if strings.HasPrefix(c.ID, "500_8_dp-ulr_") {
			cell = i
			break
		}
	}
	if cell < 0 {
		t.Fatal("no cell 500_8_dp-ulr_*")
	}
	sum, err := sweep.RunCell(context.Background(), p, cell, train.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 8 || sum.BatchSize != 500 || sum.NoiseMultiplier != 8 || math.IsNaN(sum.TestAccuracy) {
		t.Errorf("summary: %d steps, B = %d, σ0 = %v, accuracy %v; want 8 steps, B = 500, σ0 = 8", sum.Steps, sum.BatchSize, sum.NoiseMultiplier, sum.TestAccuracy)
	}
	for _, e := range sum.Epsilon {
		if e.Error != "" || !(e.Epsilon > 0) || e.Label != "paper" {
			t.Errorf("ε[%s] %+v, want a positive ε labelled paper", e.Mode, e)
		}
	}
	b, err := os.ReadFile(sum.ConfigFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"copies: 16", "controller: fixed", "sigma: 1"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the cell's config lacks %q", want)
		}
	}
}
