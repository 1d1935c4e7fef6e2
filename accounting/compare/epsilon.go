package compare

import (
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modes"
)

// Epsilon returns the guarantee of steps s (s.Count of them) under the named mode, named in
// its Accountant field. Zero steps release nothing: ε = 0 under the mode's label. A NaN or
// infinite ε is an error, never a guarantee.
func Epsilon(name string, run accounting.Run, s accounting.Step, delta float64) (accounting.Guarantee, error) {
	a, err := modes.New(name, run)
	if err != nil {
		return accounting.Guarantee{}, err
	}
	if s.Steps() > 0 || s.Count == 0 {
		if s.Count == 0 {
			return accounting.Guarantee{Accountant: name, Label: a.Label(), Delta: delta}, nil
		}
		if err := a.Compose(s); err != nil {
			return accounting.Guarantee{}, err
		}
	}
	g, err := a.Epsilon(delta)
	if err != nil {
		return g, err
	}
	if math.IsNaN(g.Epsilon) || math.IsInf(g.Epsilon, 0) {
		return g, fmt.Errorf("%s: no finite ε", name)
	}
	g.Accountant = name
	return g, nil
}
