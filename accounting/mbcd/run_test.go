package mbcd

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// TestRunConstants checks that the constants a config declares in accounting.Run reach the
// accountant exactly as Options do, and that a constant given twice differently is refused.
func TestRunConstants(t *testing.T) {
	base := convexRun(60, 2, 0)
	declared := base
	declared.ProxLipschitz, declared.GradientLipschitz, declared.InitialLSIInverse = 0.8, 0.95, 0.3
	compose := func(a *Accountant) []float64 {
		for k := range 24 {
			if err := a.Compose(stepFor(60, 10, k%6, 0.1, 1, 0.02, accounting.ShuffledOnce)); err != nil {
				t.Fatal(err)
			}
		}
		return a.Ledger()
	}
	fromRun, err := NewWithOptions(declared, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fromOpts, err := NewWithOptions(base, Options{ProxLipschitz: 0.8, GradientLipschitz: 0.95, InitialLSIInverse: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := NewWithOptions(base, Options{})
	got, want, def := compose(fromRun), compose(fromOpts), compose(plain)
	if !slices.Equal(got, want) || slices.Equal(got, def) {
		t.Errorf("ledger from Run constants %v, from Options %v (defaults give %v)", got, want, def)
	}
	if _, err := NewWithOptions(declared, Options{ProxLipschitz: 0.5}); err == nil || !strings.Contains(err.Error(), "L_T") {
		t.Errorf("L_T given twice differently: %v", err)
	}
	if _, err := NewCertified(declared); err == nil || !strings.Contains(err.Error(), "certified") {
		t.Errorf("a declared L_F accepted by the certified variant: %v", err)
	}
}

// TestSmoothnessPerRecord checks per-block smoothness carried in the records: each block's
// ledger is the one a run with that block's β alone gives, the result is larger than taking
// the maximum β for every block (which shrinks L_F = |1 − ηβ| and would under-report), and
// mixing or omitting the constants is refused.
func TestSmoothnessPerRecord(t *testing.T) {
	const n, b, eta = 60, 10, 0.1
	betas := []float64{2, 6}
	step := func(block, j int, beta float64) accounting.Step {
		s := stepFor(n, b, j, eta, 1, 0.02, accounting.ShuffledOnce)
		s.Block, s.Smoothness = block, beta
		return s
	}
	perRecord := convexRun(n, 0, 0)
	perRecord.SmoothnessPerRecord = true
	mixed, err := New(perRecord)
	if err != nil {
		t.Fatal(err)
	}
	sum := make([]float64, n/b)
	for d, beta := range betas {
		alone, _ := New(convexRun(n, beta, 0))
		for k := range 12 {
			if err := mixed.Compose(step(d, k%6, beta)); err != nil {
				t.Fatal(err)
			}
			if err := alone.Compose(step(d, k%6, 0)); err != nil {
				t.Fatal(err)
			}
		}
		for j, x := range alone.Ledger() {
			sum[j] += x
		}
	}
	for j, x := range mixed.Ledger() {
		if math.Abs(x-sum[j]) > 1e-12*sum[j] {
			t.Errorf("batch %d: per-record ledger %v, sum of single-β ledgers %v", j, x, sum[j])
		}
	}
	maxed, _ := New(convexRun(n, 6, 0))
	for d := range betas {
		for k := range 12 {
			maxed.Compose(step(d, k%6, 0))
		}
	}
	gm, _ := mixed.Epsilon(1e-5)
	gx, _ := maxed.Epsilon(1e-5)
	if !(gm.Epsilon > gx.Epsilon) {
		t.Errorf("ε with per-block β %v, with the maximum β for all %v: the maximum must not be the larger", gm.Epsilon, gx.Epsilon)
	}

	both := perRecord
	both.Smoothness = 6
	if _, err := New(both); err == nil || !strings.Contains(err.Error(), "per record") {
		t.Errorf("per-record and run-level β together: %v", err)
	}
	if err := mixed.Compose(step(0, 0, 0)); err == nil || !strings.Contains(err.Error(), "Step.Smoothness") {
		t.Errorf("a record without β in a per-record run: %v", err)
	}
	one, _ := New(convexRun(n, 2, 0))
	if err := one.Compose(step(1, 0, 6)); err == nil || !strings.Contains(err.Error(), "SmoothnessPerRecord") {
		t.Errorf("a record's β differing from the run's: %v", err)
	}
}
