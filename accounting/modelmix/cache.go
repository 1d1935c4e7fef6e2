package modelmix

import "sync"

// rdpCache memoises StepRDP per distinct step: a run with a constant or
// piecewise-constant mixing width computes each integral once, and every later step costs
// O(1). Entries are immutable once stored, so clones of an accountant share one cache.
type rdpCache struct {
	maxOrder int

	mu sync.Mutex
	m  map[Params][]float64
}

func newRDPCache(maxOrder int) *rdpCache {
	return &rdpCache{maxOrder: maxOrder, m: make(map[Params][]float64)}
}

// get returns the per-step RDP curve of p (canonical), computing it on first use. The
// returned slice must not be modified.
func (c *rdpCache) get(p Params) ([]float64, error) {
	c.mu.Lock()
	rho, ok := c.m[p]
	c.mu.Unlock()
	if ok {
		return rho, nil
	}
	// Computed outside the lock: two callers may both compute the same (deterministic) curve.
	rho, err := StepRDP(p, c.maxOrder)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.m[p] = rho
	c.mu.Unlock()
	return rho, nil
}
