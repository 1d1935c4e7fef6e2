package accounting

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
)

// Live feeds the same step records to several named accountants side by side while a run
// trains, answers what ε each reports, and keeps the run-length ledger of every record
// composed, so that a checkpoint can store it and a resumed run replay it (ε is never reset).
//
// Semantics when an accountant refuses a record (its theorem does not cover the step): the
// record still counts as released — it is appended to the ledger and composed into every
// other accountant — and the refusing accountant is marked inapplicable. From then on it
// composes nothing and every query for it returns its reason. Compose reports the refusals of
// that call in a *RefusedError; a record that is malformed (Step.Validate fails) is rejected
// as a whole and changes nothing.
//
// Live is safe for concurrent use: a progress bar may query while the trainer composes.
// Ledger, Names and Steps take a read lock; queries (Snapshot, Epsilon, WouldOvershoot) take
// the exclusive lock, because accountants may fill internal caches when asked for ε.
type Live struct {
	mu      sync.RWMutex
	names   []string
	accts   []Accountant
	refused []error // non-nil: the accountant no longer applies, and why
	ledger  []Step
	steps   int
}

// RefusedError lists the accountants that refused a record in one Compose call, by name.
type RefusedError struct {
	Step    Step
	Reasons map[string]error
}

func (e *RefusedError) Error() string {
	names := make([]string, 0, len(e.Reasons))
	for n := range e.Reasons {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s: %v", n, e.Reasons[n])
	}
	return "accounting: accountants no longer apply to this run (" + strings.Join(parts, "; ") + ")"
}

// NewLive builds the accountants called names with build (for example a closure over
// modes.New and the run). An accountant that cannot be built is an error: the caller asked
// for it.
func NewLive(names []string, build func(name string) (Accountant, error)) (*Live, error) {
	l := &Live{}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return nil, fmt.Errorf("accounting: accountant %q listed twice", n)
		}
		seen[n] = true
		a, err := build(n)
		if err != nil {
			return nil, fmt.Errorf("accounting: accountant %q: %w", n, err)
		}
		l.names = append(l.names, n)
		l.accts = append(l.accts, a)
		l.refused = append(l.refused, nil)
	}
	return l, nil
}

// ReplayLive builds the accountants and composes ledger into them: the state of a run resumed
// from a checkpoint. Refusals while replaying mark accountants inapplicable as they did in
// the original run; only a malformed record is an error.
func ReplayLive(names []string, build func(name string) (Accountant, error), ledger []Step) (*Live, error) {
	l, err := NewLive(names, build)
	if err != nil {
		return nil, err
	}
	if err := l.Replay(ledger); err != nil {
		return nil, err
	}
	return l, nil
}

// Replay composes every record of ledger, in order.
func (l *Live) Replay(ledger []Step) error {
	for i, s := range ledger {
		var refused *RefusedError
		if err := l.Compose(s); err != nil && !errors.As(err, &refused) {
			return fmt.Errorf("accounting: replaying ledger record %d: %w", i, err)
		}
	}
	return nil
}

// Compose feeds one record (standing for s.Steps() steps) to every applicable accountant and
// appends it to the ledger. See Live for what happens when an accountant refuses.
func (l *Live) Compose(s Step) error {
	if err := s.Validate(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	var refused *RefusedError
	for i, a := range l.accts {
		if l.refused[i] != nil {
			continue
		}
		if err := a.Compose(s); err != nil {
			l.refused[i] = fmt.Errorf("refused the record after step %d: %w", l.steps, err)
			if refused == nil {
				refused = &RefusedError{Step: s, Reasons: map[string]error{}}
			}
			refused.Reasons[l.names[i]] = err
		}
	}
	l.appendLedger(s)
	l.steps += s.Steps()
	if refused != nil {
		return refused
	}
	return nil
}

// appendLedger appends s to the ledger (AppendRecord).
func (l *Live) appendLedger(s Step) { l.ledger = AppendRecord(l.ledger, s) }

// AppendRecord appends s to a run-length ledger of records, merging it into the last record
// when they differ only in Count.
func AppendRecord(ledger []Step, s Step) []Step {
	s.Count = s.Steps()
	if k := len(ledger); k > 0 {
		last := ledger[k-1]
		c := last.Count
		last.Count = s.Count
		if last == s {
			ledger[k-1].Count = c + s.Count
			return ledger
		}
	}
	return append(ledger, s)
}

// Names returns the accountants' names in the order given to NewLive.
func (l *Live) Names() []string {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return append([]string(nil), l.names...)
}

// Steps returns the number of steps composed.
func (l *Live) Steps() int {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.steps
}

// Ledger returns a copy of the run-length ledger: consecutive records equal but for Count are
// merged, Count summed. It is JSON-serialisable as is.
func (l *Live) Ledger() []Step {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return append([]Step(nil), l.ledger...)
}

// Snapshot returns, in the order of Names, each accountant's guarantee at delta, or the error
// that stops it from giving one (inapplicable, or no finite ε).
func (l *Live) Snapshot(delta float64) ([]Guarantee, []error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	gs, errs := make([]Guarantee, len(l.accts)), make([]error, len(l.accts))
	for i := range l.accts {
		gs[i], errs[i] = l.epsilonLocked(i, delta)
	}
	return gs, errs
}

// Epsilon returns the guarantee of the accountant called mode at delta.
func (l *Live) Epsilon(mode string, delta float64) (Guarantee, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i, err := l.index(mode)
	if err != nil {
		return Guarantee{}, err
	}
	return l.epsilonLocked(i, delta)
}

func (l *Live) epsilonLocked(i int, delta float64) (Guarantee, error) {
	a := l.accts[i]
	g := Guarantee{Accountant: l.names[i], Label: a.Label(), Delta: delta}
	if l.refused[i] != nil {
		return g, fmt.Errorf("accounting: %s does not apply to this run: %w", l.names[i], l.refused[i])
	}
	got, err := a.Epsilon(delta)
	if err != nil {
		return g, fmt.Errorf("accounting: %s: %w", l.names[i], err)
	}
	if err := checkFinite(got.Epsilon); err != nil {
		return g, fmt.Errorf("accounting: %s: %w", l.names[i], err)
	}
	got.Accountant = l.names[i]
	return got, nil
}

// WouldOvershoot answers whether composing next into the accountant called mode would make its
// ε at delta exceed target, on a clone (the live state is unchanged). An accountant that no
// longer applies, or cannot account for next, is an error: a run that must stop at a target
// cannot go on without the answer.
func (l *Live) WouldOvershoot(next Step, target, delta float64, mode string) (bool, error) {
	return l.WouldOvershootAll([]Step{next}, target, delta, mode)
}

// WouldOvershootAll is WouldOvershoot for a step that releases several records (DP-MBCD: one
// per weight block): all of them are composed, in order, on one clone before ε is asked.
func (l *Live) WouldOvershootAll(next []Step, target, delta float64, mode string) (bool, error) {
	if len(next) == 0 {
		return false, errors.New("accounting: the next step declares no record: an optimizer must declare what it releases")
	}
	for _, s := range next {
		if err := s.Validate(); err != nil {
			return false, err
		}
	}
	if err := checkFinite(target); err != nil || target < 0 {
		return false, fmt.Errorf("accounting: target ε %v must be a finite number ≥ 0", target)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	i, err := l.index(mode)
	if err != nil {
		return false, err
	}
	if l.refused[i] != nil {
		return false, fmt.Errorf("accounting: the stopping accountant %s does not apply to this run: %w", mode, l.refused[i])
	}
	c := l.accts[i].Clone()
	for _, s := range next {
		if err := c.Compose(s); err != nil {
			return false, fmt.Errorf("accounting: the stopping accountant %s cannot account for the next step: %w", mode, err)
		}
	}
	g, err := c.Epsilon(delta)
	if err != nil {
		return false, fmt.Errorf("accounting: the stopping accountant %s: %w", mode, err)
	}
	if err := checkFinite(g.Epsilon); err != nil {
		return false, err
	}
	return g.Epsilon > target, nil
}

func (l *Live) index(mode string) (int, error) {
	for i, n := range l.names {
		if n == mode {
			return i, nil
		}
	}
	return 0, fmt.Errorf("accounting: %q is not among the live accountants %v", mode, l.names)
}

// checkFinite rejects NaN and infinite ε.
func checkFinite(eps float64) error {
	if math.IsNaN(eps) || math.IsInf(eps, 0) {
		return fmt.Errorf("accounting: ε = %v is not a finite number", eps)
	}
	return nil
}
