package dptrain

import (
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting/modes"
	"github.com/dptrain/dptrain/ledger"
)

// openStore opens the plan's ledger store (Privacy.Ledger), when it has one, and composes every
// step it holds into the session's accountants, before the session's first step.
func (s *Session) openStore() error {
	dir := s.plan.parts.Privacy.Ledger
	if dir == "" || s.live == nil {
		return nil
	}
	st, err := ledger.OpenStore(dir, func(string, ...any) {})
	if err != nil {
		return fixStoreError(err)
	}
	if err := s.live.Replay(st.Records()); err != nil {
		st.Close()
		return fmt.Errorf("dptrain: ledger store %s: %w", dir, err)
	}
	s.store = st
	return s.continueFrom(0)
}

// fixStoreError gives a damaged store's error the library's fix.
func fixStoreError(err error) error {
	var le *ledger.Error
	if errors.As(err, &le) && le.Fix == "" {
		le.Fix = fmt.Sprintf("restore %s from a backup; a new, empty store would count none of the privacy already spent on these data", le.Path)
	}
	return err
}

// continueFrom notes that the session continues a trajectory at step start: the steps the store
// holds beyond it were run on trajectories this session does not continue (other sessions, or
// a branch abandoned for an older checkpoint). They stay composed; the hidden-state bounds,
// whose theorems cover the last iterate of one trajectory, no longer apply.
func (s *Session) continueFrom(start int) error {
	s.void = nil
	if other := s.store.Executed() - start; other > 0 {
		s.void = modes.VoidHiddenState(s.live.Names(), s.plan.run,
			fmt.Sprintf("ledger store %s holds %d steps of trajectories this session does not continue", s.store.Path(), other))
	}
	if why, ok := s.void[s.plan.stop]; ok {
		return &ConfigError{Key: s.plan.names.k("Privacy.StopAccountant"), Value: s.plan.stop, Accountant: s.plan.stop, Label: s.plan.labels[s.plan.stop],
			Reason: "cannot stop this session: " + why, Fix: "stop on a composition accountant (rdp or pld)"}
	}
	return nil
}

// voided returns g with the error of an accountant whose bound no longer applies (continueFrom).
func (s *Session) voided(g Guarantee) Guarantee {
	if why, ok := s.void[g.Accountant]; ok && g.Err == nil {
		g.Epsilon, g.Err = math.NaN(), errors.New(why)
	}
	return g
}

// Close writes the ledger store to stable storage and releases it, so that another session
// can open it; the session refuses further steps. A session without a store has nothing to
// release.
func (s *Session) Close() error {
	if s.err == nil {
		s.err = errors.New("dptrain: the session is closed")
	}
	if s.store == nil {
		return nil
	}
	err := s.store.Close()
	s.store = nil
	return err
}
