package sweepline

import (
	"strings"
	"testing"
	"time"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/sweep"
	"github.com/dptrain/dptrain/train"
)

// A cell's line shows its stop accountant's ε (else its best certified ε), rounded up, with
// the certified ε beside one that is not, and says when the cell is seeded.
func TestHeadlineEpsilon(t *testing.T) {
	for _, c := range []struct {
		name string
		s    train.Summary
		want string
	}{
		{"smallest certified", train.Summary{Epsilon: []train.ModeEpsilon{
			{Mode: "sgld-conservative", Label: "certified", Epsilon: 7.784}, {Mode: "rdp", Label: "certified", Epsilon: 2.2391}, {Mode: "sgld", Label: "paper", Epsilon: 1.13}}},
			"ε 2.24 (rdp, certified)"},
		{"rounded up", train.Summary{Epsilon: []train.ModeEpsilon{{Mode: "rdp", Label: "certified", Epsilon: 1.2301}}}, "ε 1.24 (rdp, certified)"},
		{"exact", train.Summary{Epsilon: []train.ModeEpsilon{{Mode: "rdp", Label: "certified", Epsilon: 3}}}, "ε 3 (rdp, certified)"},
		{"paper with the certified one", train.Summary{Epsilon: []train.ModeEpsilon{{Mode: "mbcd-certified", Error: "refused"}, {Mode: "mbcd", Label: "paper", Epsilon: 2.9}},
			CertifiedEpsilon: &train.ModeEpsilon{Mode: "rdp", Label: "certified", Epsilon: 41.01}}, "ε 2.9 (mbcd, paper), certified ε 41.1 (rdp)"},
		{"seeded", train.Summary{Epsilon: []train.ModeEpsilon{{Mode: "rdp", Label: "certified", Epsilon: 3}}, NotPrivate: "seeded"}, "ε 3 (rdp, certified), seeded: not private"},
		{"none", train.Summary{Epsilon: []train.ModeEpsilon{{Mode: "rdp", Error: "refused"}}}, "no ε"},
		{"the stop accountant's", train.Summary{StopAccountant: "rdp", Epsilon: []train.ModeEpsilon{
			{Mode: "rdp", Label: "certified", Epsilon: 2.2391}, {Mode: "pld", Label: "certified", Epsilon: 1.91}}}, "ε 2.24 (rdp, certified)"},
		{"a paper stop accountant, the certified beside", train.Summary{StopAccountant: "sgld", Epsilon: []train.ModeEpsilon{
			{Mode: "sgld", Label: "paper", Epsilon: 1.13}, {Mode: "rdp", Label: "certified", Epsilon: 2.2391}}}, "ε 1.13 (sgld, paper), certified ε 2.24 (rdp)"},
		{"the stop accountant refused", train.Summary{StopAccountant: "pld", Epsilon: []train.ModeEpsilon{
			{Mode: "pld", Error: "refused"}, {Mode: "rdp", Label: "certified", Epsilon: 3}}}, "ε 3 (rdp, certified)"},
	} {
		if got := Headline(&c.s); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestCeil3(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{{1.2301, "1.24"}, {3, "3"}, {0.0012345, "0.00124"}, {999.1, "1e+03"}, {0, "0"}} {
		if got := Ceil3(c.in); got != c.want {
			t.Errorf("Ceil3(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCell(t *testing.T) {
	ev := sweep.CellEvent{Done: 1, Total: 4, Index: 0, ID: "a_1", Outcome: sweep.OutcomeFinished, Elapsed: 1500 * time.Millisecond,
		Summary: &train.Summary{TestAccuracy: 0.9, Epsilon: []train.ModeEpsilon{{Mode: "rdp", Label: "certified", Epsilon: 1}}}}
	if got, want := Cell(ev), "[1/4] cell 0 a_1: finished, accuracy 90.00%, ε 1 (rdp, certified), 1.5s; 3 left"; got != want {
		t.Errorf("Cell = %q, want %q", got, want)
	}
}

func TestTotals(t *testing.T) {
	got := Totals("suite", sweep.LocalReport{Ran: 3, Skipped: 1, Failed: 2, Errors: map[int]string{7: "b", 2: "a"}})
	want := "suite: 3 ran, 1 skipped (finished before), 2 failed, 0 not yet available\n  cell 2: a\n  cell 7: b\n"
	if got != want {
		t.Errorf("Totals = %q, want %q", got, want)
	}
	got = Totals("suite", sweep.LocalReport{Elsewhere: []int{1}, Interrupted: []int{2, 3}})
	if !strings.HasSuffix(got, "not yet available, 1 running elsewhere, 2 interrupted\n") {
		t.Errorf("Totals = %q", got)
	}
}
