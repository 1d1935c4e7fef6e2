package sweepline

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/cmd/dptrain/internal/sweep"
	"github.com/dptrain/dptrain/train"
)

// Cell is the line `dptrain sweep run` prints as a cell ends.
func Cell(ev sweep.CellEvent) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%d/%d] cell %d %s: %s", ev.Done, ev.Total, ev.Index, ev.ID, ev.Outcome)
	switch ev.Outcome {
	case sweep.OutcomeFinished:
		fmt.Fprintf(&b, ", accuracy %.2f%%, %s", 100*ev.Summary.TestAccuracy, Headline(ev.Summary))
	case sweep.OutcomeFailed:
		fmt.Fprintf(&b, " (%s)", ev.Err)
	case sweep.OutcomeInterrupted:
		if ev.CheckpointStep > 0 {
			fmt.Fprintf(&b, ", checkpoint at step %d", ev.CheckpointStep)
			if ev.Summary != nil {
				fmt.Fprintf(&b, ", so far %s", Headline(ev.Summary))
			}
		} else {
			b.WriteString(", no checkpoint yet (it starts again)")
		}
	case sweep.OutcomeElsewhere:
		b.WriteString(" (another process holds its lock; not run here)")
	}
	fmt.Fprintf(&b, ", %s; %d left", ev.Elapsed.Round(100*time.Millisecond), ev.Total-ev.Done)
	if ev.ETA > 0 {
		fmt.Fprintf(&b, ", ETA %s", ev.ETA.Round(time.Second))
	}
	return b.String()
}

// Headline is the ε a cell's line shows, rounded up to 3 significant digits: the ε of the
// run's stop accountant (the one its target and the suite's results are read against), else
// the smallest certified ε (each is a valid bound, so the smallest is the run's best
// guarantee), else the first mode that gave a number; with its label, and the run's smallest
// certified ε beside one that is not certified. A seeded cell is marked not private, whatever
// its ε.
func Headline(s *train.Summary) string {
	ok := func(e train.ModeEpsilon) bool { return e.Error == "" && !math.IsNaN(e.Epsilon) }
	pick, cert := -1, -1
	for k, e := range s.Epsilon {
		if !ok(e) {
			continue
		}
		if e.Label == accounting.Certified && (cert < 0 || e.Epsilon < s.Epsilon[cert].Epsilon) {
			cert = k
		}
		if pick < 0 {
			pick = k
		}
	}
	if cert >= 0 {
		pick = cert
	}
	for k, e := range s.Epsilon {
		if e.Mode == s.StopAccountant && ok(e) {
			pick = k
		}
	}
	var b strings.Builder
	if pick < 0 {
		b.WriteString("no ε")
	} else {
		e := s.Epsilon[pick]
		fmt.Fprintf(&b, "ε %s (%s, %s)", Ceil3(e.Epsilon), e.Mode, e.Label)
		switch c := s.CertifiedEpsilon; {
		case e.Label == accounting.Certified:
		case cert >= 0:
			fmt.Fprintf(&b, ", certified ε %s (%s)", Ceil3(s.Epsilon[cert].Epsilon), s.Epsilon[cert].Mode)
		case c != nil && c.Error == "":
			fmt.Fprintf(&b, ", certified ε %s (%s)", Ceil3(c.Epsilon), c.Mode)
		}
	}
	if s.NotPrivate != "" {
		b.WriteString(", seeded: not private")
	}
	return b.String()
}

// Ceil3 formats ε with 3 significant digits, rounded up (never under-report).
func Ceil3(x float64) string {
	if x <= 0 || math.IsInf(x, 0) || math.IsNaN(x) {
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	if v < x {
		v += math.Pow(10, math.Floor(math.Log10(v))-2)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// Totals is what "dptrain sweep run" prints when the run ends: how many cells of the suite ran,
// were skipped, failed or were not yet available, how many run elsewhere or were interrupted
// (when any), and then each failed cell's error, by index, one line each.
func Totals(suite string, rep sweep.LocalReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d ran, %d skipped (finished before), %d failed, %d not yet available",
		suite, rep.Ran, rep.Skipped, rep.Failed, rep.Unavailable)
	if len(rep.Elsewhere) > 0 {
		fmt.Fprintf(&b, ", %d running elsewhere", len(rep.Elsewhere))
	}
	if len(rep.Interrupted) > 0 {
		fmt.Fprintf(&b, ", %d interrupted", len(rep.Interrupted))
	}
	b.WriteString("\n")
	for _, i := range slices.Sorted(maps.Keys(rep.Errors)) {
		fmt.Fprintf(&b, "  cell %d: %s\n", i, rep.Errors[i])
	}
	return b.String()
}
