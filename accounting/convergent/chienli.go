package convergent

import (
	"fmt"

	"github.com/dptrain/dptrain/accounting"
)

// ChienLi is the "chien-li" mode: it validates the run when built and picks the theorem from the
// sampling scheme of the first step: full batch (Theorems 3.1/3.7), fixed-size batches without
// replacement (Theorem 3.12) or shuffled cyclic batches (Theorem A.1). Poisson sampling, which
// no Chien & Li theorem covers, is refused.
type ChienLi struct {
	run   accounting.Run
	opts  Options
	inner accounting.Accountant
}

// New returns the "chien-li" accountant for run with default options.
func New(run accounting.Run) (*ChienLi, error) { return NewWith(run, Options{}) }

// NewWith returns the "chien-li" accountant for run with the given options.
func NewWith(run accounting.Run, opts Options) (*ChienLi, error) {
	if err := checkRun(run, true); err != nil {
		return nil, fmt.Errorf("chien-li: %w", err)
	}
	return &ChienLi{run: run, opts: opts}, nil
}

// Name implements accounting.Accountant.
func (a *ChienLi) Name() string { return "chien-li" }

// Label implements accounting.Accountant: the chosen theorem's label (Certified before any
// step, when ε = 0).
func (a *ChienLi) Label() accounting.Label {
	if a.inner == nil {
		return accounting.Certified
	}
	return a.inner.Label()
}

// Theorem returns the name of the accountant chosen ("" before the first step).
func (a *ChienLi) Theorem() string {
	if a.inner == nil {
		return ""
	}
	return a.inner.Name()
}

// Clone implements accounting.Accountant.
func (a *ChienLi) Clone() accounting.Accountant {
	c := *a
	if a.inner != nil {
		c.inner = a.inner.Clone()
	}
	return &c
}

// Compose implements accounting.Accountant.
func (a *ChienLi) Compose(s accounting.Step) error {
	if a.inner != nil {
		return a.inner.Compose(s)
	}
	var inner accounting.Accountant
	var err error
	switch s.Sampling {
	case accounting.FullBatch:
		inner, err = NewFullBatch(a.run, a.opts)
	case accounting.WithoutReplacement:
		inner, err = NewSubsampled(a.run, a.opts)
	case accounting.Shuffled, accounting.ShuffledOnce:
		inner, err = NewCyclic(a.run)
	default:
		return fmt.Errorf("chien-li: sampling %q is covered by no Chien & Li theorem (full batch, fixed-size without replacement, shuffled cyclic); use a composition accountant", s.Sampling)
	}
	if err != nil {
		return err
	}
	if err := inner.Compose(s); err != nil {
		return err
	}
	a.inner = inner
	return nil
}

// Epsilon implements accounting.Accountant.
func (a *ChienLi) Epsilon(delta float64) (accounting.Guarantee, error) {
	if a.inner == nil {
		if !(delta > 0 && delta < 1) {
			return accounting.Guarantee{}, fmt.Errorf("chien-li: δ = %v is outside (0, 1)", delta)
		}
		return accounting.Guarantee{Accountant: a.Name(), Label: a.Label(), Delta: delta}, nil
	}
	g, err := a.inner.Epsilon(delta)
	g.Accountant = a.Name()
	return g, err
}

// Constants returns the chosen accountant's constants.
func (a *ChienLi) Constants() map[string]float64 {
	if c, ok := a.inner.(interface{ Constants() map[string]float64 }); ok {
		return c.Constants()
	}
	return map[string]float64{"n": float64(a.run.DatasetSize), "diameter": a.run.DomainDiameter, "steps": 0}
}
