package sgld

import (
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// Variant selects the drift-sensitivity lemma an Accountant uses.
type Variant int

const (
	// BatchFree is the paper's Lemma "Sensitivity": S_g = 2L/n whatever the batch size.
	BatchFree Variant = iota
	// PerBatch conditions on the batch sequence: S_g = 2L/m at steps whose batch holds the
	// differing example, worst sequence taken.
	PerBatch
)

// Accountant is the live DP-SGLD accountant. Each Compose is O(1) per step.
type Accountant struct {
	variant Variant
	run     accounting.Run

	steps     int
	sampling  accounting.Sampling
	fullBatch bool // every step so far was full batch
	sumEta    float64
	sumComp   float64 // Kahan compensation of sumEta
	maxEta    float64
	sigma     float64 // Langevin σ of the run (the smallest seen, all within relTol)
	minBatch  int
	perEpoch  int // N = ⌊n/m⌋ for the shuffled schemes

	// PerBatch state in units of 4L²/(λσ²): ρ = 4L²/(λσ²)·max(done, pending).
	// For schemes that may hold i0 in every batch only pending is used.
	done, pending float64
	// Plain RDP composition of the worst sequence, in units of L²/σ²: Σ η_k/m_k² over the
	// steps (fresh subsets) or over each epoch's worst step (shuffled); compEpoch is the
	// current epoch's worst. Valid without convexity; Rho takes the smaller of the two.
	comp, compEpoch float64
}

// New returns the paper's DP-SGLD accountant ("sgld"), Theorem 3.1 with the batch-size-free
// sensitivity 2L/n. It checks the run-level assumptions (see Requirements) and returns an error
// naming the first one that fails.
func New(run accounting.Run) (*Accountant, error) { return newAccountant(run, BatchFree) }

// NewConservative returns the certified per-batch variant ("sgld-conservative"); see the
// package documentation.
func NewConservative(run accounting.Run) (*Accountant, error) { return newAccountant(run, PerBatch) }

func newAccountant(run accounting.Run, v Variant) (*Accountant, error) {
	if err := checkRun(run); err != nil {
		return nil, err
	}
	return &Accountant{variant: v, run: run, fullBatch: true, done: math.Inf(-1)}, nil
}

// Name implements accounting.Accountant.
func (a *Accountant) Name() string {
	if a.variant == PerBatch {
		return "sgld-conservative"
	}
	return "sgld"
}

// Label implements accounting.Accountant: Certified for the per-batch variant and for a
// full-batch run (Chourasia et al. 2021, Theorem 2); Paper for the batch-free lemma on
// minibatches (Ryffel, Bach & Pointcheval's unnumbered sensitivity lemma, Section 3.3, multiplies the inclusion probability m/n into the drift).
func (a *Accountant) Label() accounting.Label {
	if a.variant == PerBatch || (a.steps > 0 && a.fullBatch) {
		return accounting.Certified
	}
	return accounting.Paper
}

// Clone implements accounting.Accountant.
func (a *Accountant) Clone() accounting.Accountant {
	c := *a
	return &c
}

// stepParams is what Compose extracts from a checked Step.
type stepParams struct {
	eta, sigma float64
	m, count   int
	sampling   accounting.Sampling
	batchIndex int
}

// check validates s against the run and the steps already composed, without changing a.
func (a *Accountant) check(s accounting.Step) (stepParams, error) {
	var p stepParams
	if err := s.Validate(); err != nil {
		return p, fmt.Errorf("sgld: %w", err)
	}
	if s.Mechanism != accounting.Gaussian {
		return p, fmt.Errorf("sgld: mechanism %q: the bound covers Langevin (Gaussian) noise only", s.Mechanism)
	}
	if s.Block != 0 {
		return p, fmt.Errorf("sgld: step updates block %d: Theorem 3.1 is for Langevin steps on the whole model; use mbcd for block coordinate descent", s.Block)
	}
	if s.Neighbouring != accounting.ReplaceOne {
		return p, fmt.Errorf("sgld: neighbouring %q: Theorem 3.1 is stated for replace-one neighbours (same n); declare replace-one", s.Neighbouring)
	}
	n := a.run.DatasetSize
	if s.DatasetSize != 0 && s.DatasetSize != n {
		return p, fmt.Errorf("sgld: step declares dataset size %d but the run has %d", s.DatasetSize, n)
	}
	switch s.Sampling {
	case accounting.FullBatch:
		p.m = n
		if s.BatchSize != 0 && s.BatchSize != n {
			return p, fmt.Errorf("sgld: full-batch step declares batch size %d, want n = %d", s.BatchSize, n)
		}
	case accounting.WithoutReplacement:
		p.m = s.BatchSize
	case accounting.Shuffled, accounting.ShuffledOnce:
		if a.variant == BatchFree {
			return p, fmt.Errorf("sgld: sampling %q is not covered by Theorem 3.1 (fresh fixed-size subsets each step); use sgld-conservative or sample without replacement", s.Sampling)
		}
		p.m = s.BatchSize
		if p.m <= 0 || p.m > n {
			return p, fmt.Errorf("sgld: shuffled sampling needs 0 < batch size (%d) <= n (%d)", p.m, n)
		}
		per := n / p.m
		if a.steps > 0 && s.BatchSize != a.minBatch {
			return p, fmt.Errorf("sgld: batch size changed from %d to %d under epoch shuffling: the epoch structure is then undefined", a.minBatch, s.BatchSize)
		}
		if want := a.steps % per; s.BatchIndex != want {
			return p, fmt.Errorf("sgld: step %d declares batch index %d, want %d (= step mod %d batches per epoch): epochs must be whole, cyclic and without partial batches", a.steps, s.BatchIndex, want, per)
		}
		p.batchIndex = s.BatchIndex
	default:
		return p, fmt.Errorf("sgld: sampling %q is not covered: DP-SGLD draws fixed-size batches (without-replacement or full)", s.Sampling)
	}
	if a.steps > 0 && s.Sampling != a.sampling {
		return p, fmt.Errorf("sgld: sampling changed from %q to %q within the run", a.sampling, s.Sampling)
	}
	p.sampling = s.Sampling

	eta := s.StepSize
	if !positiveFinite(eta) {
		return p, fmt.Errorf("sgld: step size %v: declare the step size η > 0 the step applied", eta)
	}
	if beta := a.run.Smoothness; eta*beta >= 1 {
		return p, fmt.Errorf("sgld: step size %v ≥ 1/β = %v: Lemma 3.3 needs η < 1/β at every step", eta, 1/beta)
	}
	p.eta = eta

	if s.Sensitivity != 0 && s.Sensitivity < a.run.Lipschitz {
		return p, fmt.Errorf("sgld: gradients clipped at %v < L = %v: active clipping breaks the convexity the bound needs; clip at ≥ L or not at all", s.Sensitivity, a.run.Lipschitz)
	}
	std := s.NoiseStd
	if prod := s.NoiseMultiplier * s.Sensitivity; std == 0 {
		std = prod
	} else if s.Sensitivity != 0 && math.Abs(prod-std) > relTol*std {
		return p, fmt.Errorf("sgld: noise std %v disagrees with noise multiplier × sensitivity = %v", std, prod)
	}
	if !positiveFinite(std) {
		return p, fmt.Errorf("sgld: noise std %v: declare NoiseStd (on the summed gradient) or NoiseMultiplier and Sensitivity", std)
	}
	// Parameter-space noise is η·std/m = sqrt(2η)·σ.
	p.sigma = std * math.Sqrt(eta/2) / float64(p.m)
	if a.steps > 0 && math.Abs(p.sigma-a.sigma) > relTol*a.sigma {
		return p, fmt.Errorf("sgld: Langevin σ changed from %v to %v: Theorem 3.1 needs a constant σ (noise std sqrt(2η)·σ)", a.sigma, p.sigma)
	}
	p.count = s.Steps()
	return p, nil
}

// Compose implements accounting.Accountant. It returns an error, and leaves a unchanged, when
// the step is outside Theorem 3.1.
func (a *Accountant) Compose(s accounting.Step) error {
	p, err := a.check(s)
	if err != nil {
		return err
	}
	if a.steps == 0 || p.sigma < a.sigma {
		a.sigma = p.sigma
	}
	if a.steps == 0 || p.m < a.minBatch {
		a.minBatch = p.m
	}
	a.sampling = p.sampling
	a.fullBatch = a.fullBatch && p.sampling == accounting.FullBatch
	a.maxEta = math.Max(a.maxEta, p.eta)
	a.addEta(float64(p.count) * p.eta)

	if a.variant == PerBatch {
		lam := a.run.StrongConvexity
		w := 1 / (float64(p.m) * float64(p.m))
		switch p.sampling {
		case accounting.Shuffled, accounting.ShuffledOnce:
			// Worst position of i0 within each epoch: done = max ρ-unit given i0's batch of
			// this epoch has run, pending = given it has not.
			a.perEpoch = a.run.DatasetSize / p.m
			decay := math.Exp(-lam * p.eta / 2)
			for i := 0; i < p.count; i++ {
				a.compEpoch = math.Max(a.compEpoch, p.eta*w)
				a.done = math.Max(a.done*decay, a.pending*decay+(1-decay)*w)
				a.pending *= decay
				if (a.steps+i+1)%a.perEpoch == 0 {
					a.pending = math.Max(a.done, a.pending)
					a.done = math.Inf(-1)
					a.comp += a.compEpoch
					a.compEpoch = 0
				}
			}
		default:
			// i0 may be in every batch: ρ_{k+1} = a_k ρ_k + (1 − a_k)·ρ_∞(m).
			keep := math.Exp(-lam * p.eta * float64(p.count) / 2)
			a.pending = keep*a.pending - math.Expm1(-lam*p.eta*float64(p.count)/2)*w
			a.comp += float64(p.count) * p.eta * w
		}
	}
	a.steps += p.count
	return nil
}

// addEta adds x to the running sum of step sizes with Kahan compensation.
func (a *Accountant) addEta(x float64) {
	y := x - a.sumComp
	t := a.sumEta + y
	a.sumComp = (t - a.sumEta) - y
	a.sumEta = t
}

// Steps returns the number of steps composed.
func (a *Accountant) Steps() int { return a.steps }

// SumStepSize returns Σ η_k over the steps composed.
func (a *Accountant) SumStepSize() float64 { return a.sumEta }

// Sigma returns the Langevin σ of the run (0 before the first step).
func (a *Accountant) Sigma() float64 { return a.sigma }

// RhoInf returns the saturation value of ρ (K → ∞): 4L²/(λn²σ²) for the paper's variant,
// 4L²/(λm²σ²) with the smallest batch for the conservative one. It is +Inf before any step
// (σ unknown).
func (a *Accountant) RhoInf() float64 {
	if a.steps == 0 {
		return math.Inf(1)
	}
	size := float64(a.run.DatasetSize)
	if a.variant == PerBatch {
		size = float64(a.minBatch)
	}
	return 4 * a.run.Lipschitz * a.run.Lipschitz / (a.run.StrongConvexity * size * size * a.sigma * a.sigma)
}

// Rho returns ρ_K, the RDP per unit of α of the last iterate: ε(α) = α·ρ_K for every α > 1.
func (a *Accountant) Rho() float64 {
	if a.steps == 0 {
		return 0
	}
	lip, lam := a.run.Lipschitz, a.run.StrongConvexity
	if a.variant == PerBatch {
		return math.Min(a.rhoLSI(), a.rhoComposition())
	}
	// Theorem 3.1: ρ_∞·(1 − exp(−λS/2)), with expm1 for small λS.
	n := float64(a.run.DatasetSize)
	return 4 * lip * lip / (lam * n * n * a.sigma * a.sigma) * -math.Expm1(-lam*a.sumEta/2)
}

// rhoLSI is the conservative variant's Theorem 3.1 recursion for the worst batch sequence.
func (a *Accountant) rhoLSI() float64 {
	lip, lam := a.run.Lipschitz, a.run.StrongConvexity
	return 4 * lip * lip / (lam * a.sigma * a.sigma) * math.Max(a.done, a.pending)
}

// rhoComposition is the RDP per unit of α of composing the worst sequence's Gaussian steps,
// each with parameter sensitivity 2η_kL/m_k and noise variance 2η_kσ²: Σ η_k·L²/(m_k²σ²). It
// needs no convexity and is the smaller bound for short runs (the LSI bound of Ryffel, Bach & Pointcheval's Theorem 3.1 is
// about twice composition while K ≪ β/λ).
func (a *Accountant) rhoComposition() float64 {
	lip := a.run.Lipschitz
	return lip * lip / (a.sigma * a.sigma) * (a.comp + a.compEpoch)
}

// RDP returns the Rényi DP of the last iterate at order alpha > 1.
func (a *Accountant) RDP(alpha float64) (float64, error) {
	if !(alpha > 1) || math.IsInf(alpha, 1) {
		return 0, fmt.Errorf("sgld: Rényi order %v: want a finite α > 1", alpha)
	}
	return alpha * a.Rho(), nil
}

// Epsilon implements accounting.Accountant: the smaller of the Canonne–Kamath–Steinke
// conversion over a grid of orders (accounting.RDPToEpsilon) and Mironov's closed form
// ρ + 2·sqrt(ρ·log(1/δ)) at α* = 1 + sqrt(log(1/δ)/ρ) (Mironov 2017, Proposition 3, minimised in closed form; Ryffel et al., Proposition 2.1), rounded up.
func (a *Accountant) Epsilon(delta float64) (accounting.Guarantee, error) {
	return a.guarantee(a.Rho(), delta)
}

// EpsilonLimit is the guarantee for any number of further steps of the same σ and batch size:
// ρ replaced by its saturation value RhoInf (Theorem 3.1 as Σ_k η_k → ∞).
func (a *Accountant) EpsilonLimit(delta float64) (accounting.Guarantee, error) {
	if a.steps == 0 {
		return accounting.Guarantee{}, fmt.Errorf("sgld: no step composed yet: σ is unknown")
	}
	return a.guarantee(a.RhoInf(), delta)
}

func (a *Accountant) guarantee(rho, delta float64) (accounting.Guarantee, error) {
	g := accounting.Guarantee{Accountant: a.Name(), Label: a.Label(), Delta: delta}
	eps, order, err := linearRDPToEpsilon(rho, delta)
	if err != nil {
		return accounting.Guarantee{}, fmt.Errorf("sgld: %w", err)
	}
	g.Epsilon, g.Order = eps, order
	return g, nil
}

// Constants returns every number the bound used, keyed by name.
func (a *Accountant) Constants() map[string]float64 {
	c := map[string]float64{
		"n":                float64(a.run.DatasetSize),
		"steps":            float64(a.steps),
		"sigma":            a.sigma,
		"sum_step_size":    a.sumEta,
		"max_step_size":    a.maxEta,
		"lipschitz":        a.run.Lipschitz,
		"smoothness":       a.run.Smoothness,
		"strong_convexity": a.run.StrongConvexity,
		"diameter":         a.run.DomainDiameter,
		"rho":              a.Rho(),
	}
	if a.steps > 0 {
		c["batch_size"] = float64(a.minBatch)
		c["rho_inf"] = a.RhoInf()
		size := float64(a.run.DatasetSize)
		if a.variant == PerBatch {
			size = float64(a.minBatch)
		}
		c["drift_sensitivity"] = 2 * a.run.Lipschitz / size
		if a.variant == PerBatch {
			c["rho_lsi"] = a.rhoLSI()
			c["rho_composition"] = a.rhoComposition()
		}
	}
	return c
}

var _ accounting.Accountant = (*Accountant)(nil)
