package pld

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/dptrain/dptrain/accounting"
)

// Grid limits. They bound what one query can cost whatever σ is: a step's discretisation holds
// at most maxStepPoints points (2 MiB), a composed window at most maxFFTSize, and the grid
// interval is never coarser than maxInterval. A run that needs a finer grid than these allow
// gets a coarser one (connect-the-dots on any grid is pessimistic, so ε stays an upper bound,
// only looser); a run that needs more points even at maxInterval is refused.
const (
	maxStepPoints = 1 << 18
	maxInterval   = 0.5
)

// pmfKey identifies a cached discretisation.
type pmfKey struct {
	q, sigma, h float64
	dir         direction
}

// maxCachedSteps caps how many discretised steps a cache holds (each at most maxStepPoints
// points, 2 MiB): a run whose σ changes from step to step does not grow it without bound.
const maxCachedSteps = 32

// pmfCache holds the connect-the-dots PLDs computed so far; entries are never modified, so an
// accountant and its clones share one cache (the live accountant's "one more step?" clone
// then reuses, and leaves behind, the grids it needed). Safe for concurrent use.
type pmfCache struct {
	mu sync.Mutex
	m  map[pmfKey]*pmf
}

func (c *pmfCache) get(q, sigma float64, d direction, h float64) *pmf {
	k := pmfKey{q, sigma, h, d}
	c.mu.Lock()
	p, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return p
	}
	p = discretise(q, sigma, d, h)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedSteps {
		c.m = map[pmfKey]*pmf{}
	}
	c.m[k] = p
	return p
}

// directions lists the orders of the dominating pair that must be composed for records.
func directions(records []group) []direction {
	for _, g := range records {
		if g.q != 1 {
			return []direction{remove, add}
		}
	}
	return []direction{remove} // the Gaussian pair is symmetric: both orders have the same PLD
}

// stepInterval is the finest grid interval h·2^k on which one step of g fits in maxStepPoints
// grid points in both orders, or an error when even maxInterval does not hold it (σ so small
// that one step's privacy loss spans more than maxStepPoints·maxInterval).
func stepInterval(g group, h float64) (float64, error) {
	hh := h
	for _, d := range directions([]group{g}) {
		for gridPoints(g.q, g.sigma, d, hh) > maxStepPoints {
			if hh *= 2; hh > maxInterval {
				coarsest := hh / 2
				lo, hi := lossRange(g.q, g.sigma, d)
				need := gridPoints(g.q, g.sigma, d, h)
				return 0, &accounting.RequirementError{Accountant: Name,
					Reason: fmt.Sprintf("one step (σ = %.4g, q = %.4g) has privacy losses in [%.4g, %.4g]: its discretisation needs %.3g grid points at interval %g (%s), and %.3g even at the coarsest interval %g, more than this accountant's limit of %d",
						g.sigma, g.q, lo, hi, need, h, bytesOf(need), gridPoints(g.q, g.sigma, d, coarsest), coarsest, maxStepPoints),
					Fix: "drop pld from %s, or use rdp (it accounts for this step in closed form)", Fields: []string{"Run.Accountants"}}
			}
		}
	}
	return hh, nil
}

// bytesOf says how much memory n float64 grid points take.
func bytesOf(n float64) string {
	b := 8 * n
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	}
	return fmt.Sprintf("%.0f KiB", b/(1<<10))
}

// epsilonConnectTheDots is ε(δ) of the composition of records: the larger over the removal
// and addition orders of the pair, each composed by FFT on the grid of interval h or, where a
// step or the composed window would need more points than the limits allow (maxStepPoints,
// maxFFTSize), on the finest coarser grid h·2^k that holds them (package doc).
func epsilonConnectTheDots(records []group, h, delta float64, cache *pmfCache) (float64, error) {
	tau := math.Max(1e-6*delta, 1e-300)
	start := h
	for _, g := range records {
		hg, err := stepInterval(g, h)
		if err != nil {
			return 0, err
		}
		start = math.Max(start, hg)
	}
	var eps float64
	for _, d := range directions(records) {
		for hh, last := start, start; ; {
			if hh > maxInterval {
				return 0, &accounting.RequirementError{Accountant: Name,
					Reason: fmt.Sprintf("the composed privacy loss spans too wide a range: its window needs more than %d grid points even at interval %g, the coarsest tried", maxFFTSize, last),
					Fix:    "drop pld from %s, or use rdp", Fields: []string{"Run.Accountants"}}
			}
			last = hh
			groups := make([]selfComposed, len(records))
			for i, g := range records {
				groups[i] = selfComposed{cache.get(g.q, g.sigma, d, hh), g.count}
			}
			c, err := compose(groups, hh, tau)
			var wide *tooWideError
			if errors.As(err, &wide) {
				// The window's width in loss units hardly depends on the grid: jump to the
				// interval that should hold it rather than discretising every level between.
				for w := wide.width; w > maxFFTSize; w /= 2 {
					hh *= 2
				}
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
