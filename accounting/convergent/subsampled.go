package convergent

import (
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// phiPoints is the number of intervals of the φ_α table.
const phiPoints = 16000

// Subsampled is the hidden-state accountant of Theorem 3.12: fixed-size batches of b of the n
// examples drawn without replacement, independently each step, (L, λ)-Hölder gradients
// (λ = 1: the smooth specialisation with h(z) = z/c, which also covers the convex classes;
// left as an exercise by Chien & Li). With the noise split eliminated per step,
//
//	ε(α) = min( T·S_α(q, σ/u_b) , min over τ ≥ 1 and feasible shifts of Σ_{t=τ}^{T−1} φ_α(a_t) ),
//
// q = b/n, u_b = 2ηK/b, evaluated at each integer order by the block solver (smooth losses)
// or the grid dynamic program (Hölder gradients). The
// tracking assumes the differing example is in every batch (Theorem 3.12's D_t), which
// dominates the other case.
//
// Label: accounting.Paper. The subsampled proof is a sketch resting on Altschuler & Talwar's
// mini-batch coupling (Chien & Li, App. A.3); by default the bound uses the conservative
// standard-direction S_α and the derivation's √β (Options.ExactSGM and Options.PaperLiteral
// select the paper's choices).
type Subsampled struct {
	run   accounting.Run
	opts  Options
	p     *params
	steps int
	// engines[i] evaluates order orders[i]; shared by clones.
	orders  []int
	engines []*gridEngine
	// blocks[i] is the smooth-case Lagrangian solver of order orders[i] (nil for Hölder).
	blocks []*blockSolver
}

// NewSubsampled returns a Theorem 3.12 accountant for run, or an error naming the assumption
// the run does not declare.
func NewSubsampled(run accounting.Run, opts Options) (*Subsampled, error) {
	if err := checkRun(run, true); err != nil {
		return nil, fmt.Errorf("chien-li subsampled: %w", err)
	}
	for _, o := range opts.orders() {
		if o < 2 {
			return nil, fmt.Errorf("chien-li subsampled: order %d: the subsampled bound uses integer orders ≥ 2", o)
		}
	}
	return &Subsampled{run: run, opts: opts, orders: opts.orders()}, nil
}

// Name implements accounting.Accountant.
func (a *Subsampled) Name() string { return "chien-li-subsampled" }

// Label implements accounting.Accountant.
func (a *Subsampled) Label() accounting.Label { return accounting.Paper }

// Clone implements accounting.Accountant.
func (a *Subsampled) Clone() accounting.Accountant {
	c := *a
	return &c
}

// Compose implements accounting.Accountant.
func (a *Subsampled) Compose(s accounting.Step) error {
	p, err := stepParams(a.run, subsampled, s, a.p)
	if err != nil {
		return fmt.Errorf("chien-li subsampled: %w", err)
	}
	if a.p == nil {
		a.engines = make([]*gridEngine, len(a.orders))
		a.blocks = make([]*blockSolver, len(a.orders))
		for i, o := range a.orders {
			a.engines[i], a.blocks[i] = subsampledEngine(p, a.opts, o)
		}
		a.p = &p
	}
	a.steps += s.Steps()
	return nil
}

// subsampledMaps returns the shift map g of the dynamic program (h with constant ηL, as
// Theorem 3.12 states) and the tracking map (ηL(b−1)/b: Lemma A.2 with the differing example in
// the batch). For λ = 1 both are the Lipschitz map of Lemma 3.4 applied to the batch average.
func subsampledMaps(p params) (shift, track growth) {
	if p.smooth() && p.convexity != accounting.NonConvex {
		g := growth{coef: p.delta(), lambda: 1}
		return g, g
	}
	shift = growth{coef: p.eta * p.l, lambda: p.lambda}
	track = growth{coef: p.eta * p.l * float64(p.b-1) / float64(p.b), lambda: p.lambda}
	return shift, track
}

// subsampledEngine returns the grid engine of one order and, for smooth losses, the block
// solver sharing its φ table and tracking.
func subsampledEngine(p params, opts Options, order int) (*gridEngine, *blockSolver) {
	alpha := float64(order)
	q := float64(p.b) / float64(p.n)
	ub := p.u()
	s0 := p.sigma / ub
	sgm := func(s float64) float64 { return sgmStandard(q, s, order) }
	if opts.ExactSGM {
		sgm = func(s float64) float64 { return sgmExact(q, s, alpha) }
	}
	shift, trk := subsampledMaps(p)
	top := math.Max(p.d, shift.apply(p.d))
	aMax := shift.apply(top) * (1 + 1e-9)
	phi := newPhiTable(sgm, s0, alpha, p.sigma, aMax, phiPoints, opts.PaperLiteral)
	e := newGrid(shift, p.d, opts.gridSize(), phi.at)
	// φ_α(a) ≥ max(φ_α(0), α·a²/(2σ²)).
	e.kappa, e.additive = alpha/(2*p.sigma*p.sigma), false
	lbDelta := shift.coef
	if !p.smooth() {
		lbDelta = p.eta * p.l * math.Pow(e.x[len(e.x)-1], p.lambda-1)
	}
	e.lbShift = shiftProblem{u: ub, delta: lbDelta}
	tr := newTrack(tracker{g: trk, add: ub, jump: 2 * p.eta * p.k, diam: p.d})
	e.setTrack(tr)
	if !p.smooth() {
		return e, nil
	}
	return e, newBlockSolver(phiFunc(sgm, s0, alpha, p.sigma, opts.PaperLiteral), aMax, shift.coef, tr)
}

// bound returns order i's bound at the current horizon and the cut attaining it: the block
// solver's for smooth losses (a few thousand table lookups per query, and tighter than the grid
// on every case tested), the grid program's for Hölder gradients.
func (a *Subsampled) bound(i int) (float64, int) {
	if b := a.blocks[i]; b != nil {
		return b.bound(a.steps)
	}
	return a.engines[i].bound(a.steps)
}

// Steps returns the number of steps composed.
func (a *Subsampled) Steps() int { return a.steps }

// Orders returns the Rényi orders the accountant evaluates.
func (a *Subsampled) Orders() []int { return append([]int(nil), a.orders...) }

// RDPCurve returns ε(α) at every order, rounded up, and the cut τ at each.
func (a *Subsampled) RDPCurve() (rdp []float64, taus []int) {
	rdp, taus = make([]float64, len(a.orders)), make([]int, len(a.orders))
	if a.p == nil || a.steps == 0 {
		return rdp, taus
	}
	for i := range a.engines {
		v, tau := a.bound(i)
		rdp[i], taus[i] = roundUp(v), tau
	}
	return rdp, taus
}

// RDP returns ε(α) at one of the accountant's orders.
func (a *Subsampled) RDP(alpha float64) (float64, error) {
	for i, o := range a.orders {
		if float64(o) == alpha {
			if a.p == nil || a.steps == 0 {
				return 0, nil
			}
			v, _ := a.bound(i)
			return roundUp(v), nil
		}
	}
	return 0, fmt.Errorf("chien-li subsampled: order %v is not among the accountant's orders %v; set Options.Orders", alpha, a.orders)
}

// Epsilon implements accounting.Accountant.
func (a *Subsampled) Epsilon(delta float64) (accounting.Guarantee, error) {
	g := accounting.Guarantee{Accountant: a.Name(), Label: a.Label(), Delta: delta}
	if !(delta > 0 && delta < 1) {
		return accounting.Guarantee{}, fmt.Errorf("chien-li subsampled: δ = %v is outside (0, 1)", delta)
	}
	if a.p == nil || a.steps == 0 {
		return g, nil
	}
	rdp, _ := a.RDPCurve()
	orders := make([]float64, len(a.orders))
	for i, o := range a.orders {
		orders[i] = float64(o)
	}
	eps, order, err := curveToEpsilon(orders, rdp, delta)
	if err != nil {
		return accounting.Guarantee{}, fmt.Errorf("chien-li subsampled: %w", err)
	}
	g.Epsilon, g.Order = eps, order
	return g, nil
}

// Constants returns every number the bound used, keyed by name.
func (a *Subsampled) Constants() map[string]float64 {
	if a.p == nil {
		return map[string]float64{"n": float64(a.run.DatasetSize), "diameter": a.run.DomainDiameter, "steps": 0}
	}
	c := a.p.constants(a.steps)
	c["sample_rate_q"] = float64(a.p.b) / float64(a.p.n)
	c["sgm_noise_s0"] = a.p.sigma / a.p.u()
	if a.blocks[0] != nil {
		c["block_solver_blocks"] = maxBlocks
	} else {
		c["grid_size"] = float64(a.opts.gridSize())
	}
	c["paper_literal_beta"] = b2f(a.opts.PaperLiteral)
	c["exact_sgm"] = b2f(a.opts.ExactSGM)
	if a.steps > 0 {
		rdp, taus := a.RDPCurve()
		for i, o := range a.orders {
			c[fmt.Sprintf("rdp_order_%d", o)] = rdp[i]
			c[fmt.Sprintf("cut_tau_order_%d", o)] = float64(taus[i])
		}
	}
	return c
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
