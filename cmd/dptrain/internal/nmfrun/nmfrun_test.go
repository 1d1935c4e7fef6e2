package nmfrun

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/algorithm/dpmbcd/nmf"
	"github.com/dptrain/dptrain/data"
)

// TestNMFCalibrationRoundsAgainstPrivacy: the calibrated σ's declared RDP is at most the target
// and within 1e-6 of it.
func TestNMFCalibrationRoundsAgainstPrivacy(t *testing.T) {
	ds, _, err := data.NewLowRank(data.LowRankConfig{Rows: 40, Cols: 10, Rank: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, certified := range []bool{false, true} {
		set := Settings{Rank: 3, Eta: 1, Kappa: 1.1, RowNorm: 1.5, Clip: 0.5, Inner: 1}
		name := "dp-mbcd"
		if certified {
			name = "dp-mbcd-certified"
		}
		md, err := nmf.New(Config(set, name), ds.Train.X, 40, 10, newTestRand())
		if err != nil {
			t.Fatal(err)
		}
		sigma, err := CalibrateMBCD(md, 10, 5, 2, 0.42, certified)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DeclaredRDP(md, 10, 5, 2, certified)
		if err != nil {
			t.Fatal(err)
		}
		if got > 0.42 || math.Abs(got-0.42) > 1e-6 {
			t.Errorf("certified %v: σ = %v gives RDP(2) = %v, want ≤ 0.42 and within 1e-6", certified, sigma, got)
		}
	}
}

func newTestRand() *rand.Rand { return rand.New(rand.NewPCG(1, 2)) }

// CompositionSigma's σ gives at most the target RDP 2αK/σ² and is within rounding of it.
func TestCompositionSigma(t *testing.T) {
	s := CompositionSigma(2, 200, 0.42)
	if got := 2 * 2 * 200 / (s * s); got > 0.42 || math.Abs(got-0.42) > 1e-12 {
		t.Errorf("σ = %v gives RDP(2) = %v, want ≤ 0.42 and within 1e-12", s, got)
	}
}

func TestRoundUp(t *testing.T) {
	for _, c := range []struct{ in, want float64 }{{0.420001, 0.4201}, {1234.5, 1235}, {0.42, 0.42}, {0, 0}} {
		if got := RoundUp(c.in); got != c.want {
			t.Errorf("RoundUp(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}

// RunCell reports every guarantee the cell's method has: the private block method under the
// paper's accountant (the certified one not covering carried rows) and composition; DP-SGD by
// composition only; the non-private baselines none.
func TestRunCell(t *testing.T) {
	ds, _, err := data.NewLowRank(data.LowRankConfig{Rows: 40, Cols: 10, Rank: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	set := Settings{Rows: 40, Cols: 10, Rank: 3, Epochs: 2, Seeds: 2, Inner: 1, Eta: 1, Kappa: 1.1, RowNorm: 3, Clip: 0.5, Target: 0.42, Alpha: 2, Delta: 1e-5}
	for _, c := range []struct {
		method string
		want   []string
	}{
		{"dp-mbcd", []string{"mbcd [paper] RDP(2) 0.42,", "mbcd-certified: not covered", "composition [certified]"}},
		{"dp-mbcd-certified", []string{"mbcd-certified [certified] RDP(2) 0.42,"}},
		{"dp-sgd", []string{"composition [certified] RDP(2) 0.42,"}},
		{"sgd", []string{"none (σ = 0: not private)"}},
	} {
		cell, err := RunCell(set, ds.Train.X, c.method, 10)
		if err != nil {
			t.Fatal(c.method, err)
		}
		got := strings.Join(cell.Guarantees, "; ")
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: guarantees %q lack %q", c.method, got, w)
			}
		}
		if len(cell.Errs) != 2 {
			t.Errorf("%s: %d errors, want one per seed", c.method, len(cell.Errs))
		}
	}
	if _, err := RunCell(set, ds.Train.X, "dp-sgd", 7); err == nil {
		t.Error("a batch that does not divide the rows was accepted")
	}
	if _, err := RunCell(set, ds.Train.X, "adam", 10); err == nil {
		t.Error("an unknown method was accepted")
	}
}
