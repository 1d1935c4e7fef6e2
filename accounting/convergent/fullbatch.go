package convergent

import (
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// horizonBound is the minimum over cut times of a hidden-state bound at horizon T.
type horizonBound interface {
	bound(T int) (value float64, tau int)
}

// FullBatch is the full-batch hidden-state accountant: Theorem 3.1 for L-smooth losses
// (non-convex, convex or strongly convex; water-filling, the exact minimum of Eqs. 11–12) and Theorem 3.7
// for (L, λ)-Hölder gradients with λ < 1 (grid dynamic program over the shift path). Its RDP is linear in the
// order, ε(α) = ρ·α with
//
//	ρ = (1/(2σ²))·min( T·u² , min over τ ≥ 1 of V_{T−τ}(D_τ) ),   u = 2ηK/n.
//
// Label: accounting.Certified.
type FullBatch struct {
	run   accounting.Run
	opts  Options
	p     *params
	steps int
	eng   horizonBound
}

// NewFullBatch returns a full-batch accountant for run, or an error naming the assumption of
// Theorems 3.1/3.7 that the run does not declare.
func NewFullBatch(run accounting.Run, opts Options) (*FullBatch, error) {
	if err := checkRun(run, true); err != nil {
		return nil, fmt.Errorf("chien-li full batch: %w", err)
	}
	return &FullBatch{run: run, opts: opts}, nil
}

// Name implements accounting.Accountant.
func (a *FullBatch) Name() string { return "chien-li-full-batch" }

// Label implements accounting.Accountant.
func (a *FullBatch) Label() accounting.Label { return accounting.Certified }

// Clone implements accounting.Accountant. Clones share the read-only-after-growth tables.
func (a *FullBatch) Clone() accounting.Accountant {
	c := *a
	return &c
}

// Compose implements accounting.Accountant.
func (a *FullBatch) Compose(s accounting.Step) error {
	p, err := stepParams(a.run, fullBatch, s, a.p)
	if err != nil {
		return fmt.Errorf("chien-li full batch: %w", err)
	}
	if a.p == nil {
		a.eng = fullBatchEngine(p, a.opts)
		a.p = &p
	}
	a.steps += s.Steps()
	return nil
}

func fullBatchEngine(p params, opts Options) horizonBound {
	u := p.u()
	if p.smooth() {
		// Lemma 3.5: D_t = min(c·D_{t−1} + 2ηK/n, D_{t−1} + 2ηK, D).
		return newSmoothEngine(u, p.delta(), tracker{g: growth{coef: p.delta(), lambda: 1}, add: u, jump: 2 * p.eta * p.k, diam: p.d})
	}
	// Theorem 3.7 with g(x) = x + ηL·x^λ; Lemma 3.10 for the tracking.
	g := growth{coef: p.eta * p.l, lambda: p.lambda}
	e := newGrid(g, p.d, opts.gridSize(), func(a float64) float64 { return (u + a) * (u + a) })
	top := e.x[len(e.x)-1]
	// On [0, top], g(x) ≥ (1 + ηL·top^{λ−1})·x: the linear lower bound of the shifts.
	e.kappa, e.additive = 1, true
	e.lbShift = shiftProblem{u: u, delta: p.eta * p.l * math.Pow(top, p.lambda-1)}
	e.setTrack(newTrack(tracker{g: g, add: u, jump: 2 * p.eta * p.k, diam: p.d}))
	return e
}

// Steps returns the number of steps composed.
func (a *FullBatch) Steps() int { return a.steps }

// Rho returns ε(α)/α after the steps composed, rounded up, and the cut τ of the bound
// (0: standard composition).
func (a *FullBatch) Rho() (rho float64, tau int) {
	if a.p == nil || a.steps == 0 {
		return 0, 0
	}
	v, tau := a.eng.bound(a.steps)
	return roundUp(v / (2 * a.p.sigma * a.p.sigma)), tau
}

// RDP returns the Rényi DP ε(α) = ρ·α of the last iterate.
func (a *FullBatch) RDP(alpha float64) (float64, error) {
	if !(alpha > 1) || math.IsInf(alpha, 1) {
		return 0, fmt.Errorf("chien-li full batch: order %v: want a finite α > 1", alpha)
	}
	rho, _ := a.Rho()
	return roundUp(rho * alpha), nil
}

// Epsilon implements accounting.Accountant.
func (a *FullBatch) Epsilon(delta float64) (accounting.Guarantee, error) {
	return linearGuarantee(a.Name(), a.Label(), a.Rho, delta)
}

func linearGuarantee(name string, label accounting.Label, rho func() (float64, int), delta float64) (accounting.Guarantee, error) {
	r, _ := rho()
	eps, order, err := linearToEpsilon(r, delta)
	if err != nil {
		return accounting.Guarantee{}, fmt.Errorf("%s: %w", name, err)
	}
	return accounting.Guarantee{Accountant: name, Label: label, Epsilon: eps, Delta: delta, Order: order}, nil
}

// Constants returns every number the bound used, keyed by name.
func (a *FullBatch) Constants() map[string]float64 {
	if a.p == nil {
		return map[string]float64{"n": float64(a.run.DatasetSize), "diameter": a.run.DomainDiameter, "steps": 0}
	}
	c := a.p.constants(a.steps)
	rho, tau := a.Rho()
	c["rho"], c["cut_tau"] = rho, float64(tau)
	c["rho_composition"] = roundUp(float64(a.steps) * a.p.u() * a.p.u() / (2 * a.p.sigma * a.p.sigma))
	if a.p.smooth() {
		c["tracked_distance_sup"] = a.eng.(*smoothEngine).tr.sup
	} else {
		c["grid_size"] = float64(a.opts.gridSize())
	}
	return c
}

// Certificate is a feasible point of Theorem 3.1: the cut τ, the shifts a_t and the noise
// splits β_t for t = τ..T−1, the tracked distance D_τ the shifts must absorb and the value
// ρ = ε(α)/α. Any certificate that passes an independent check of the constraint
// Σ_t c^{−(t−τ+1)}·a_t ≥ D_τ is a valid bound (any feasible τ, β, a in Theorem 3.1 is).
type Certificate struct {
	Tau      int
	Distance float64
	Shifts   []float64
	Betas    []float64
	Rho      float64
}

// Certificate returns the allocation attaining the smooth (λ = 1) bound at the current step
// count; Shifts is empty when the bound is plain composition.
func (a *FullBatch) Certificate() (Certificate, error) {
	if a.p == nil || a.steps == 0 {
		return Certificate{}, errors.New("chien-li full batch: no steps composed")
	}
	e, ok := a.eng.(*smoothEngine)
	if !ok {
		return Certificate{}, errors.New("chien-li full batch: certificates are only produced for smooth losses (λ = 1)")
	}
	rho, tau := a.Rho()
	c := Certificate{Tau: tau, Rho: rho}
	if tau == 0 {
		return c, nil
	}
	c.Distance = e.tr.at(tau)
	c.Shifts, c.Betas = e.sp.allocation(a.steps-tau, c.Distance)
	return c, nil
}
