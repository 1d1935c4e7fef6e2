package train

import (
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modes"
)

// live is the run's accounting.Live multiplexer, with the trainer's view of it: records from
// the optimizer in, ε per configured mode out.
type live struct {
	*accounting.Live
	// void holds the accountants that no longer apply to the run although they accepted its
	// records, with the reason: the hidden-state accountants once the run has executed steps
	// on a branch it abandoned (see voidHiddenState).
	void map[string]string
	// startLabels is each accountant's label once it has composed the run's first step: the
	// label reported while nothing has been composed, so that it does not depend on whether
	// a step ran (the GDP accountant is certified with no step and approximate after the
	// first subsampled one).
	startLabels map[string]accounting.Label
}

// voidHiddenState marks the accountants whose theorem needs the release to be the last
// iterate of one trajectory (they refuse run with LastIterateOnly unset) as no longer
// applying: the run executed abandoned steps on its data, on a branch whose iterates, metrics
// and possibly released model the operator saw before continuing from an older checkpoint.
// The composition accountants cover every iterate of every branch, so their ε, over the whole
// ledger, still holds.
func (l *live) voidHiddenState(run accounting.Run, abandoned int) {
	l.void = modes.VoidHiddenState(l.Names(), run,
		fmt.Sprintf("%d steps of this run were executed on a branch it abandoned (a resume from an older checkpoint)", abandoned))
}

// snapshot returns ε at δ for every accountant, in the configured order.
func (l *live) snapshot(delta float64) []ModeEpsilon {
	gs, errs := l.Snapshot(delta)
	out := make([]ModeEpsilon, len(gs))
	for i, g := range gs {
		out[i] = ModeEpsilon{Mode: l.Names()[i], Label: g.Label, Epsilon: g.Epsilon, Delta: delta, Order: g.Order}
		if lb, ok := l.startLabels[out[i].Mode]; ok && l.Steps() == 0 {
			out[i].Label = lb
		}
		if r, ok := l.void[out[i].Mode]; ok && errs[i] == nil {
			errs[i] = errors.New(r)
		}
		if errs[i] != nil {
			out[i].Epsilon, out[i].Order, out[i].Label, out[i].Error = math.NaN(), 0, "", accounting.Describe(errs[i], configKey)
		}
	}
	return out
}
