package pld

import (
	"errors"
	"fmt"
	"math"
)

// pmfKey identifies a cached discretisation.
type pmfKey struct {
	q, sigma, h float64
	dir         direction
}

// pmfCache holds the connect-the-dots PLDs computed so far; entries are never modified.
type pmfCache map[pmfKey]*pmf

func (c pmfCache) get(q, sigma float64, d direction, h float64) *pmf {
	k := pmfKey{q, sigma, h, d}
	if p, ok := c[k]; ok {
		return p
	}
	p := discretise(q, sigma, d, h)
	c[k] = p
	return p
}

// epsilonConnectTheDots is ε(δ) of the composition of records: the larger over the removal
// and addition orders of the pair, each composed by FFT on the grid of interval h, doubled
// until the composed window fits (package doc).
func epsilonConnectTheDots(records []group, h, delta float64, cache pmfCache) (float64, error) {
	tau := math.Max(1e-6*delta, 1e-300)
	dirs := []direction{remove, add}
	allFull := true
	for _, g := range records {
		allFull = allFull && g.q == 1
	}
	if allFull {
		dirs = dirs[:1] // the Gaussian pair is symmetric: both orders have the same PLD
	}
	var eps float64
	for _, d := range dirs {
		for hh := h; ; hh *= 2 {
			if hh > 0.5 {
				return 0, errors.New("pld: the composed privacy loss spans too wide a range for the FFT window; use the rdp accountant")
			}
			groups := make([]selfComposed, len(records))
			for i, g := range records {
				groups[i] = selfComposed{cache.get(g.q, g.sigma, d, hh), g.count}
			}
			c, err := compose(groups, hh, tau)
			if errors.Is(err, errTooWide) {
				continue
			}
			if err != nil {
				return 0, err
			}
			e, err := c.epsilon(delta)
			if err != nil {
				return 0, err
			}
			if math.IsNaN(e) || math.IsInf(e, 0) {
				return 0, fmt.Errorf("pld: numerical failure (ε = %v)", e)
			}
			eps = math.Max(eps, e)
			break
		}
	}
	return eps, nil
}
