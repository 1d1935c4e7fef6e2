package mbcd

import (
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// Variant selects how the contraction constants are obtained and how far the result is
// trusted.
type Variant int

const (
	// Paper is Theorem 4.6 as printed (label accounting.Paper).
	Paper Variant = iota
	// Certified uses only steps whose proof is complete (label accounting.Certified).
	Certified
)

// Options tunes an Accountant beyond what accounting.Run declares.
type Options struct {
	Variant Variant
	// GradientLipschitz, when > 0, is the paper's user-supplied L_F of every step (Paper
	// variant only; the certified one derives L_F from the declared λ and β).
	GradientLipschitz float64
	// ProxLipschitz is L_T, the Lipschitz constant of the prox (0 means 1: any convex prox is
	// firmly non-expansive; 1/(1+ηλ_r) for an l2 prox of strength λ_r).
	ProxLipschitz float64
	// InitialLSIInverse is 1/c_0: 0 for an initialisation that does not depend on the data and
	// is treated as public (a point mass), s0² for N(0, s0²·I).
	InitialLSIInverse float64
}

// Accountant is the live DP-MBCD accountant. A step costs O(⌊n/b⌋) for shuffle-once
// partitions and O(1) otherwise.
type Accountant struct {
	opts Options
	run  accounting.Run

	sampling accounting.Sampling
	b, per   int // batch size and batches per epoch ⌊n/b⌋
	steps    int
	blocks   map[int]*ledger
	order    []int // block ids in order of first appearance

	// Constants seen, for Constants().
	minEta, maxEta   float64
	minO, maxO       float64
	maxLF, lt, clip  float64
	sumDelta, stdMin float64
}

// New returns the paper's accountant ("mbcd"); see the package documentation.
func New(run accounting.Run) (*Accountant, error) { return NewWithOptions(run, Options{}) }

// NewCertified returns the certified accountant ("mbcd-certified").
func NewCertified(run accounting.Run) (*Accountant, error) {
	return NewWithOptions(run, Options{Variant: Certified})
}

// NewWithOptions returns an accountant after checking the run-level assumptions. The run's
// ProxLipschitz, GradientLipschitz and InitialLSIInverse (how a config declares them) fill
// the options left 0; a constant given differently in both is refused.
func NewWithOptions(run accounting.Run, opts Options) (*Accountant, error) {
	for _, c := range []struct {
		name     string
		opt      *float64
		declared float64
	}{
		{"prox Lipschitz constant L_T", &opts.ProxLipschitz, run.ProxLipschitz},
		{"gradient-map Lipschitz constant L_F", &opts.GradientLipschitz, run.GradientLipschitz},
		{"initial 1/c_0", &opts.InitialLSIInverse, run.InitialLSIInverse},
	} {
		switch {
		case *c.opt == 0:
			*c.opt = c.declared
		case c.declared != 0 && c.declared != *c.opt:
			return nil, fmt.Errorf("mbcd: %s is %v in the options but the run declares %v: give it once", c.name, *c.opt, c.declared)
		}
	}
	if opts.ProxLipschitz == 0 {
		opts.ProxLipschitz = 1
	}
	if err := checkRun(run, opts); err != nil {
		return nil, err
	}
	return &Accountant{opts: opts, run: run, blocks: map[int]*ledger{}}, nil
}

// Name implements accounting.Accountant.
func (a *Accountant) Name() string {
	if a.opts.Variant == Certified {
		return "mbcd-certified"
	}
	return "mbcd"
}

// Label implements accounting.Accountant.
func (a *Accountant) Label() accounting.Label {
	if a.opts.Variant == Certified {
		return accounting.Certified
	}
	return accounting.Paper
}

// Clone implements accounting.Accountant.
func (a *Accountant) Clone() accounting.Accountant {
	c := *a
	c.blocks = make(map[int]*ledger, len(a.blocks))
	for k, l := range a.blocks {
		c.blocks[k] = l.clone()
	}
	c.order = append([]int(nil), a.order...)
	return &c
}

// stepParams is what Compose extracts from a checked Step.
type stepParams struct {
	b, j, count, block   int
	eta, o, delta, lf, c float64
	std                  float64
}

func (a *Accountant) check(s accounting.Step) (stepParams, error) {
	var p stepParams
	if err := s.Validate(); err != nil {
		return p, fmt.Errorf("mbcd: %w", err)
	}
	if s.Mechanism != accounting.Gaussian {
		return p, fmt.Errorf("mbcd: mechanism %q: the bound covers Gaussian noise added to the block update only", s.Mechanism)
	}
	if s.Neighbouring != accounting.ReplaceOne {
		return p, fmt.Errorf("mbcd: neighbouring %q: the analysis is for replace-one neighbours (the differing example keeps its batch); declare replace-one", s.Neighbouring)
	}
	n := a.run.DatasetSize
	if s.DatasetSize != 0 && s.DatasetSize != n {
		return p, fmt.Errorf("mbcd: step declares dataset size %d but the run has %d", s.DatasetSize, n)
	}
	p.b = s.BatchSize
	switch s.Sampling {
	case accounting.FullBatch:
		if p.b == 0 {
			p.b = n
		}
		if p.b != n {
			return p, fmt.Errorf("mbcd: full-batch step declares batch size %d, want n = %d", s.BatchSize, n)
		}
	case accounting.ShuffledOnce, accounting.Shuffled, accounting.WithoutReplacement:
		if p.b <= 0 || p.b > n {
			return p, fmt.Errorf("mbcd: batch size %d outside (0, n = %d]", p.b, n)
		}
	default:
		return p, fmt.Errorf("mbcd: sampling %q is not covered: DP-MBCD needs fixed-size batches (shuffled-once partition, or reshuffled/fresh/full with a worst-case bound)", s.Sampling)
	}
	if a.steps > 0 && (s.Sampling != a.sampling || p.b != a.b) {
		return p, fmt.Errorf("mbcd: sampling %q with batch size %d after %q with %d: the partition must stay fixed within a run", s.Sampling, p.b, a.sampling, a.b)
	}
	per := n / p.b
	p.block = s.Block
	if a.opts.Variant == Certified && len(a.order) > 0 && s.Block != a.order[0] {
		return p, fmt.Errorf("mbcd: block %d after block %d: the certified bound covers one released block (the paper's sum over blocks ignores that each block's update depends on the others); use mode mbcd", s.Block, a.order[0])
	}
	switch s.Sampling {
	case accounting.ShuffledOnce:
		if s.BatchIndex < 0 || s.BatchIndex >= per {
			return p, fmt.Errorf("mbcd: batch index %d outside the %d batches of the partition", s.BatchIndex, per)
		}
		p.j = s.BatchIndex
	case accounting.Shuffled:
		t := 0
		if l := a.blocks[s.Block]; l != nil {
			t = l.t
		}
		if s.BatchIndex != t%per {
			return p, fmt.Errorf("mbcd: block %d step %d declares batch index %d, want %d (= step mod %d batches): reshuffled epochs must be whole and cyclic", s.Block, t, s.BatchIndex, t%per, per)
		}
		p.j = s.BatchIndex
	}

	p.eta = s.StepSize
	if !(p.eta > 0) || math.IsInf(p.eta, 1) {
		return p, fmt.Errorf("mbcd: step size %v: declare the η > 0 the step used", p.eta)
	}
	p.c = s.Sensitivity
	if !(p.c > 0) || math.IsInf(p.c, 1) {
		return p, fmt.Errorf("mbcd: sensitivity %v: declare the per-example clip norm C of the block gradient", p.c)
	}
	std, prod := s.NoiseStd, s.NoiseMultiplier*s.Sensitivity
	if std == 0 {
		std = prod
	} else if math.Abs(std-prod) > 1e-9*std {
		return p, fmt.Errorf("mbcd: noise std %v disagrees with noise multiplier × sensitivity = %v", std, prod)
	}
	if !(std > 0) || math.IsInf(std, 1) {
		return p, fmt.Errorf("mbcd: noise std %v: declare NoiseStd on the summed gradient", std)
	}
	p.std = std
	bf := float64(p.b)
	p.o = p.eta * std * std / (2 * bf * bf)
	sg := 2 * p.c // replace-one: S_g = 2C
	p.delta = p.eta * sg * sg / (4 * bf * bf * p.o)
	if math.IsInf(p.delta, 0) || math.IsNaN(p.delta) || math.IsInf(p.o, 0) {
		return p, fmt.Errorf("mbcd: noise std %v with step size %v overflows: no finite bound", std, p.eta)
	}

	beta, lam := a.run.Smoothness, a.run.StrongConvexity
	switch {
	case a.run.SmoothnessPerRecord:
		if !(s.Smoothness > 0) {
			return p, &accounting.RequirementError{Accountant: "mbcd", Reason: fmt.Sprintf("the run declares smoothness per record, but block %d's record declares none", s.Block),
				Fix: "set %s to the block's β", Fields: []string{"Step.Smoothness"}}
		}
		if s.Smoothness < lam {
			return p, fmt.Errorf("mbcd: block %d's smoothness β = %v < strong convexity λ = %v: check the declared constants", s.Block, s.Smoothness, lam)
		}
		beta = s.Smoothness
	case s.Smoothness != 0 && s.Smoothness != beta:
		return p, &accounting.RequirementError{Accountant: "mbcd", Reason: fmt.Sprintf("block %d's record declares smoothness %v, the run %v", s.Block, s.Smoothness, beta),
			Fix: "declare %s for per-block constants", Fields: []string{"Run.SmoothnessPerRecord"}}
	}
	switch {
	case a.opts.Variant == Certified:
		p.lf = math.Max(math.Abs(1-p.eta*lam), math.Abs(1-p.eta*beta))
	case a.opts.GradientLipschitz > 0:
		p.lf = a.opts.GradientLipschitz
	default:
		p.lf = math.Abs(1 - p.eta*beta) // Lemma B.1 as printed
	}
	p.count = s.Steps()
	return p, nil
}

// Compose implements accounting.Accountant. It returns an error, and leaves a unchanged, when
// the step is outside the analysis.
func (a *Accountant) Compose(s accounting.Step) error {
	p, err := a.check(s)
	if err != nil {
		return err
	}
	n := a.run.DatasetSize
	a.sampling, a.b, a.per = s.Sampling, p.b, n/p.b
	if s.Sampling == accounting.FullBatch {
		a.sampling = accounting.FullBatch
	}
	l := a.blocks[p.block]
	if l == nil {
		l = newLedger(a.per, a.opts.InitialLSIInverse)
		a.blocks[p.block] = l
		a.order = append(a.order, p.block)
	}
	lt := a.opts.ProxLipschitz
	exponent := 1 / (lt * lt) // Theorem C.2 as printed
	if a.opts.Variant == Certified {
		exponent = 1
	}
	for i := 0; i < p.count; i++ {
		l.update(a.sampling, a.per, (p.j+i)%a.per, p.eta, p.o, p.delta, p.lf, lt, exponent)
	}
	if a.steps == 0 {
		a.minEta, a.minO, a.stdMin = p.eta, p.o, p.std
	}
	a.minEta, a.maxEta = math.Min(a.minEta, p.eta), math.Max(a.maxEta, p.eta)
	a.minO, a.maxO = math.Min(a.minO, p.o), math.Max(a.maxO, p.o)
	a.stdMin = math.Min(a.stdMin, p.std)
	a.maxLF, a.lt, a.clip = math.Max(a.maxLF, p.lf), lt, math.Max(a.clip, p.c)
	a.sumDelta += float64(p.count) * p.delta
	a.steps += p.count
	return nil
}

// Steps returns the number of block updates composed.
func (a *Accountant) Steps() int { return a.steps }

// Ledger returns E[j0] = Σ_blocks e_block[j0], the bound on R_α/α given that the differing
// example is in batch j0 of a shuffle-once partition; nil for other sampling schemes.
func (a *Accountant) Ledger() []float64 {
	if a.sampling != accounting.ShuffledOnce {
		return nil
	}
	e := make([]float64, a.per)
	for _, l := range a.blocks {
		for j, x := range l.e {
			e[j] += x
		}
	}
	return e
}

// LSIInverse returns 1/c_t of the given block's current iterate (Lemma C.3).
func (a *Accountant) LSIInverse(block int) float64 {
	if l := a.blocks[block]; l != nil {
		return l.invc
	}
	return a.opts.InitialLSIInverse
}

// worst is the bound on R_α/α for the worst position of the differing example, blocks summed.
func (a *Accountant) worst() float64 {
	w := 0.0
	for _, l := range a.blocks {
		w += l.worst(a.sampling)
	}
	return w
}

// RDP returns the Rényi DP of the last iterate at order alpha > 1 (Theorem 4.6, Eq. (9), with
// the mixture over j0 for shuffle-once partitions and the worst case otherwise).
func (a *Accountant) RDP(alpha float64) (float64, error) {
	if !(alpha > 1) || math.IsInf(alpha, 1) {
		return 0, fmt.Errorf("mbcd: Rényi order %v: want a finite α > 1", alpha)
	}
	if a.sampling != accounting.ShuffledOnce {
		return alpha * a.worst(), nil
	}
	return mixtureRDP(a.Ledger(), a.b, a.run.DatasetSize, alpha), nil
}

// RDPMax is the RDP without the mixture over j0: α·max_j0 E[j0] (for partitions whose batch
// of the differing example is not uniformly random).
func (a *Accountant) RDPMax(alpha float64) (float64, error) {
	if !(alpha > 1) || math.IsInf(alpha, 1) {
		return 0, fmt.Errorf("mbcd: Rényi order %v: want a finite α > 1", alpha)
	}
	return alpha * a.worst(), nil
}

// mixtureRDP is 1/(α−1)·log(Σ_j (b/n)·exp((α−1)·α·e[j]) + (n − len(e)·b)/n), by log-sum-exp.
func mixtureRDP(e []float64, b, n int, alpha float64) float64 {
	wj := float64(b) / float64(n)
	rest := float64(n-len(e)*b) / float64(n)
	m := math.Inf(-1)
	if rest > 0 {
		m = 0
	}
	for _, x := range e {
		m = math.Max(m, (alpha-1)*alpha*x)
	}
	sum := rest * math.Exp(-m)
	for _, x := range e {
		sum += wj * math.Exp((alpha-1)*alpha*x-m)
	}
	return math.Max(0, (m+math.Log(sum))/(alpha-1))
}

// Epsilon implements accounting.Accountant: accounting.RDPToEpsilon (Canonne–Kamath–Steinke)
// over a grid of orders that spans the optimum of the worst-case linear bound by a factor of
// 300 below and 2000 above, refined around the best point; hidden-state RDP is small, so the
// best order is often in the hundreds or thousands (Chen & Liu give no RDP→(ε, δ) conversion; they search α by bisection, as FastDP does).
func (a *Accountant) Epsilon(delta float64) (accounting.Guarantee, error) {
	g := accounting.Guarantee{Accountant: a.Name(), Label: a.Label(), Delta: delta}
	if !(delta > 0 && delta < 1) {
		return g, fmt.Errorf("mbcd: δ = %v is outside (0, 1)", delta)
	}
	rho := a.worst()
	if math.IsNaN(rho) || math.IsInf(rho, 0) {
		return accounting.Guarantee{}, errors.New("mbcd: the ledger overflowed: no finite ε")
	}
	if rho == 0 {
		return g, nil
	}
	centre := math.Sqrt(math.Log(1/delta) / rho) // α* − 1 of the linear bound α·rho
	var orders []float64
	for i := -60; i <= 80; i++ {
		orders = append(orders, 1+centre*math.Pow(1.1, float64(i)))
	}
	eps, order, err := a.convert(orders, delta)
	if err != nil {
		return accounting.Guarantee{}, err
	}
	orders = orders[:0]
	for i := -20; i <= 20; i++ {
		orders = append(orders, 1+(order-1)*math.Pow(1.005, float64(i)))
	}
	if e, o, err := a.convert(orders, delta); err == nil && e < eps {
		eps, order = e, o
	}
	for range 4 {
		eps = math.Nextafter(eps, math.Inf(1))
	}
	if math.IsNaN(eps) || math.IsInf(eps, 0) {
		return accounting.Guarantee{}, errors.New("mbcd: ε overflowed: no finite guarantee")
	}
	g.Epsilon, g.Order = eps, order
	return g, nil
}

func (a *Accountant) convert(orders []float64, delta float64) (eps, order float64, err error) {
	rdp := make([]float64, len(orders))
	for i, o := range orders {
		if rdp[i], err = a.RDP(o); err != nil {
			return 0, 0, err
		}
	}
	eps, order, err = accounting.RDPToEpsilon(orders, rdp, delta)
	if err != nil {
		return 0, 0, fmt.Errorf("mbcd: %w", err)
	}
	return eps, order, nil
}

// Constants returns every number the bound used, keyed by name.
func (a *Accountant) Constants() map[string]float64 {
	c := map[string]float64{
		"n":                   float64(a.run.DatasetSize),
		"batch_size":          float64(a.b),
		"batches_per_epoch":   float64(a.per),
		"steps":               float64(a.steps),
		"blocks":              float64(len(a.blocks)),
		"step_size_min":       a.minEta,
		"step_size_max":       a.maxEta,
		"noise_control_min":   a.minO,
		"noise_control_max":   a.maxO,
		"noise_std_min":       a.stdMin,
		"clip_norm":           a.clip,
		"sensitivity_sg":      2 * a.clip,
		"lf_max":              a.maxLF,
		"lt":                  a.opts.ProxLipschitz,
		"smoothness":          a.run.Smoothness,
		"strong_convexity":    a.run.StrongConvexity,
		"initial_lsi_inv":     a.opts.InitialLSIInverse,
		"composition_sum":     a.sumDelta,
		"worst_rdp_per_alpha": a.worst(),
	}
	if len(a.order) > 0 {
		c["lsi_inv_last"] = a.LSIInverse(a.order[len(a.order)-1])
	}
	return c
}

var _ accounting.Accountant = (*Accountant)(nil)
