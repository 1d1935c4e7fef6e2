package main

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models/nmf"
)

func TestNMFCommand(t *testing.T) {
	small := []string{"nmf", "--rows", "40", "--cols", "10", "--rank", "3", "--epochs", "3", "--seeds", "2", "--inner", "2"}
	out, _, err := runDptrain(t, append(small, "--batch", "10,20")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"seeded noise: reproducible, not private",
		"mbcd [paper] RDP(2) 0.42,",                                       // dp-mbcd calibrated under the paper's bound
		"mbcd-certified [certified] RDP(2) 0.42,",                         // dp-mbcd-certified under the certified one
		"mbcd-certified: not covered (hidden rows carried across visits)", // dp-mbcd, dp-sgd
		"composition [certified] RDP(2) 0.42,",                            // dp-sgd
		"none (σ = 0: not private)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if got := strings.Count(out, "\n"); got != 3+2*5 {
		t.Errorf("%d lines, want a header and 5 methods × 2 batch sizes:\n%s", got, out)
	}
	for _, bad := range [][]string{{"--batch", "7"}, {"--methods", "adam"}, {"--alpha", "1"}} {
		if _, _, err := runDptrain(t, append(small, bad...)...); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestNMFCalibrationRoundsAgainstPrivacy: the calibrated σ's declared RDP is at most the target
// and within 1e-6 of it.
func TestNMFCalibrationRoundsAgainstPrivacy(t *testing.T) {
	ds, _, err := data.NewLowRank(data.LowRankConfig{Rows: 40, Cols: 10, Rank: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, certified := range []bool{false, true} {
		f := &nmfFlags{rank: 3, eta: 1, kappa: 1.1, rowNorm: 1.5, clip: 0.5, inner: 1}
		name := "dp-mbcd"
		if certified {
			name = "dp-mbcd-certified"
		}
		md, err := nmf.New(nmfConfig(f, name), ds.Train.X, 40, 10, newTestRand())
		if err != nil {
			t.Fatal(err)
		}
		sigma, err := calibrateMBCD(md, 10, 5, 2, 0.42, certified)
		if err != nil {
			t.Fatal(err)
		}
		got, err := declaredRDP(md, 10, 5, 2, certified)
		if err != nil {
			t.Fatal(err)
		}
		if got > 0.42 || math.Abs(got-0.42) > 1e-6 {
			t.Errorf("certified %v: σ = %v gives RDP(2) = %v, want ≤ 0.42 and within 1e-6", certified, sigma, got)
		}
	}
}

func newTestRand() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }
