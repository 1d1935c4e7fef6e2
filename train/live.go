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
}

// newLive builds the configured accountants for run. An accountant whose theorem does not
// cover the run is an error here, before training: the config asked for it.
func newLive(names []string, run accounting.Run) (*live, error) {
	l, err := accounting.NewLive(names, func(name string) (accounting.Accountant, error) { return modes.New(name, run) })
	if err != nil {
		return nil, fmt.Errorf("privacy.accountants: %s (remove it from the list, or change the run so that its assumptions hold)", InUserTerms(err.Error(), ConfigTerms))
	}
	return &live{l}, nil
}

// compose feeds one step's records to every accountant. An accountant that refuses a record
// stops applying and reports its reason instead of ε from then on; that is not an error for
// the run (the stopping accountant's refusal surfaces at the next overshoot check).
func (l *live) compose(records []accounting.Step) error {
	for _, r := range records {
		var refused *accounting.RefusedError
		if err := l.Compose(r); err != nil && !errors.As(err, &refused) {
			return err
		}
	}
	return nil
}

// wouldOvershoot reports whether the records of the next step, all of them, would take the
// stopping accountant above target.
func (l *live) wouldOvershoot(next []accounting.Step, mode string, target, delta float64) (bool, error) {
	return l.WouldOvershootAll(next, target, delta, mode)
}

// snapshot returns ε at δ for every accountant, in the configured order.
func (l *live) snapshot(delta float64) []ModeEpsilon {
	gs, errs := l.Snapshot(delta)
	out := make([]ModeEpsilon, len(gs))
	for i, g := range gs {
		out[i] = ModeEpsilon{Mode: l.Names()[i], Label: g.Label, Epsilon: g.Epsilon, Delta: delta, Order: g.Order}
		if errs[i] != nil {
			out[i].Epsilon, out[i].Order, out[i].Label, out[i].Error = math.NaN(), 0, "", InUserTerms(errs[i].Error(), ConfigTerms)
		}
	}
	return out
}
