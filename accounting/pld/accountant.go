package pld

import (
	"errors"
	"fmt"

	"github.com/dptrain/dptrain/accounting"
)

// Name is the accountant's mode name.
const Name = "pld"

// DefaultInterval is the default grid interval h of the privacy loss.
const DefaultInterval = 1e-4

// Accountant composes Gaussian steps as privacy loss distributions. Compose only records the
// step; Epsilon composes lazily and caches the result until the next Compose.
type Accountant struct {
	h       float64
	records []group
	cache   *pmfCache // shared with clones
}

type group struct {
	q, sigma float64
	count    int
}

// New returns an accountant with the default grid interval.
func New(accounting.Run) (*Accountant, error) { return NewWithInterval(DefaultInterval) }

// NewWithInterval returns an accountant with grid interval h (smaller: tighter and slower).
func NewWithInterval(h float64) (*Accountant, error) {
	if !(h > 0 && h <= 0.1) {
		return nil, fmt.Errorf("pld: grid interval %v must be in (0, 0.1]", h)
	}
	return &Accountant{h: h, cache: &pmfCache{}}, nil
}

// Name implements accounting.Accountant.
func (a *Accountant) Name() string { return Name }

// Label implements accounting.Accountant.
func (a *Accountant) Label() accounting.Label { return accounting.Certified }

// Compose implements accounting.Accountant.
func (a *Accountant) Compose(s accounting.Step) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Mechanism != accounting.Gaussian {
		return fmt.Errorf("pld: mechanism %q is not the Gaussian mechanism", s.Mechanism)
	}
	g := group{q: s.SampleRate, sigma: s.NoiseMultiplier, count: s.Steps()}
	switch s.Sampling {
	case accounting.FullBatch:
		g.q = 1
		if s.Neighbouring == accounting.ReplaceOne {
			g.sigma /= 2
		}
	case accounting.Poisson:
		if s.Neighbouring == accounting.ReplaceOne {
			return errors.New("pld: Poisson sampling is analysed for add/remove neighbours")
		}
	default:
		return fmt.Errorf("pld: %s sampling is not covered (the subsampled-Gaussian PLD assumes Poisson sampling)", s.Sampling)
	}
	// A step whose loss no grid within the limits can hold is refused here, before any grid
	// is allocated, so that a run learns at its first step that pld cannot account for it.
	if _, err := stepInterval(g, a.h); err != nil {
		return err
	}
	if n := len(a.records); n > 0 && a.records[n-1].q == g.q && a.records[n-1].sigma == g.sigma {
		a.records[n-1].count += g.count
	} else {
		a.records = append(a.records, g)
	}
	return nil
}

// Epsilon implements accounting.Accountant.
func (a *Accountant) Epsilon(delta float64) (accounting.Guarantee, error) {
	gu := accounting.Guarantee{Accountant: Name, Label: accounting.Certified, Delta: delta}
	if !(delta > 0 && delta < 1) {
		return gu, fmt.Errorf("pld: δ = %v is outside (0, 1)", delta)
	}
	if len(a.records) == 0 {
		return gu, nil
	}
	if a.cache == nil {
		a.cache = &pmfCache{}
	}
	eps, err := epsilonConnectTheDots(a.records, a.h, delta, a.cache)
	if err != nil {
		return gu, err
	}
	gu.Epsilon = eps
	return gu, nil
}

// Clone implements accounting.Accountant.
func (a *Accountant) Clone() accounting.Accountant {
	c := *a
	c.records = append([]group(nil), a.records...)
	return &c
}
