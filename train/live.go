package train

import (
	"fmt"
	"math"
	"sync"

	"github.com/dptrain/dptrain/accounting"
)

// Live feeds every step record of a run to the configured accountants and answers, at any
// time and from any goroutine, what ε each reports. It keeps the run-length ledger of all
// records composed, which checkpoints store so that a resumed run replays it and ε is never
// reset.
type Live struct {
	mu     sync.RWMutex
	names  []string
	accts  []accounting.Accountant
	reason []string // why an accountant stopped applying mid-run; "" while it applies
	ledger []accounting.Step
	run    accounting.Run
}

// NewLive builds the named accountants for run. An accountant whose theorem does not cover the
// run is an error here, before training: the config asked for it.
func NewLive(names []string, run accounting.Run) (*Live, error) {
	l := &Live{run: run}
	for _, name := range names {
		a, err := newAccountant(name, run)
		if err != nil {
			return nil, fmt.Errorf("privacy.accountants lists %q, which cannot account for this run: %w", name, err)
		}
		l.names = append(l.names, name)
		l.accts = append(l.accts, a)
		l.reason = append(l.reason, "")
	}
	return l, nil
}

// Compose feeds the records of one step to every accountant. An accountant that refuses a
// record stops applying: it reports its reason instead of ε from then on. The ledger keeps
// every record.
func (l *Live) Compose(records []accounting.Step) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range records {
		if err := r.Validate(); err != nil {
			return err
		}
		for i, a := range l.accts {
			if l.reason[i] != "" {
				continue
			}
			if err := a.Compose(r); err != nil {
				l.reason[i] = err.Error()
			}
		}
		l.appendLedger(r)
	}
	return nil
}

func (l *Live) appendLedger(r accounting.Step) {
	if k := len(l.ledger); k > 0 {
		last := l.ledger[k-1]
		c := last.Steps()
		last.Count = r.Count
		if last == r {
			l.ledger[k-1].Count = c + r.Steps()
			return
		}
	}
	r.Count = r.Steps()
	l.ledger = append(l.ledger, r)
}

// Snapshot returns ε at δ for every accountant, in the configured order.
func (l *Live) Snapshot(delta float64) []ModeEpsilon {
	l.mu.RLock()
	defer l.mu.RUnlock()
	out := make([]ModeEpsilon, len(l.accts))
	for i, a := range l.accts {
		out[i] = ModeEpsilon{Mode: l.names[i], Label: a.Label(), Delta: delta}
		if l.reason[i] != "" {
			out[i].Error = l.reason[i]
			continue
		}
		if len(l.ledger) == 0 {
			continue // nothing released yet: ε = 0
		}
		g, err := a.Epsilon(delta)
		switch {
		case err != nil:
			out[i].Error = err.Error()
		case math.IsNaN(g.Epsilon) || math.IsInf(g.Epsilon, 0):
			out[i].Error = fmt.Sprintf("accountant returned ε = %v", g.Epsilon)
		default:
			out[i].Epsilon, out[i].Order, out[i].Label = g.Epsilon, g.Order, g.Label
		}
	}
	return out
}

// WouldOvershoot reports whether composing next into the accountant called mode would make its
// ε at δ exceed target, and the ε it would reach. An accountant that cannot answer is an error:
// training must not go on without the check.
func (l *Live) WouldOvershoot(next []accounting.Step, mode string, target, delta float64) (bool, float64, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	for i, name := range l.names {
		if name != mode {
			continue
		}
		if l.reason[i] != "" {
			return false, 0, fmt.Errorf("the stopping accountant %s no longer applies: %s", mode, l.reason[i])
		}
		c := l.accts[i].Clone()
		for _, r := range next {
			if err := c.Compose(r); err != nil {
				return false, 0, fmt.Errorf("the stopping accountant %s cannot account for the next step: %w", mode, err)
			}
		}
		g, err := c.Epsilon(delta)
		if err != nil {
			return false, 0, fmt.Errorf("the stopping accountant %s: %w", mode, err)
		}
		return g.Epsilon > target, g.Epsilon, nil
	}
	return false, 0, fmt.Errorf("the stopping accountant %s is not among the live accountants %v", mode, l.names)
}

// Ledger returns a copy of the run-length ledger of every record composed.
func (l *Live) Ledger() []accounting.Step {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return append([]accounting.Step(nil), l.ledger...)
}

// Replay composes a ledger saved by a checkpoint into fresh accountants.
func (l *Live) Replay(ledger []accounting.Step) error {
	for _, r := range ledger {
		if err := l.Compose([]accounting.Step{r}); err != nil {
			return fmt.Errorf("replaying the checkpoint's privacy ledger: %w", err)
		}
	}
	return nil
}
