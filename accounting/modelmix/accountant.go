package modelmix

import (
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// Name is the accountant's name in reports and in the modes map.
const Name = "modelmix"

// Options tune the accountant. The zero value is the default.
type Options struct {
	// MaxOrder is the largest integer Rényi order of the grid {2, …, MaxOrder}; 0 means
	// DefaultMaxOrder. Raise it (to 1024) for ε below about 0.5, where the best order
	// approaches 256 (the paper uses integer orders α > 1 without stating a range).
	MaxOrder int
	// ClassicConversion converts RDP to (ε, δ) with the paper's Theorem 2.2,
	// ε = R(α) + ln(1/δ)/(α−1) (accounting.RDPToEpsilonClassic), for parity with the paper's
	// numbers; the default is the tighter accounting.RDPToEpsilon.
	ClassicConversion bool
}

func (o Options) maxOrder() (int, error) {
	switch {
	case o.MaxOrder == 0:
		return DefaultMaxOrder, nil
	case o.MaxOrder < 2 || o.MaxOrder > maxOrderLimit:
		return 0, fmt.Errorf("modelmix: maximum Rényi order %d is outside [2, %d]", o.MaxOrder, maxOrderLimit)
	}
	return o.MaxOrder, nil
}

// Accountant is the live ModelMix accountant (Xiao, Wan & Devadas, "Differentially Private Deep Learning
// with ModelMix", Section 4): it composes the per-step RDP of
// Theorem 4.1 / Corollary 4.1 additively over steps and converts to (ε, δ) on demand.
//
// Each distinct step (q, Z, W, p) is integrated once and cached; composing a step already seen
// costs O(1), and Epsilon costs O(#distinct steps · #orders).
//
// Threat model (the white-box adversary of Theorem 4.1's proof, Appendix C): the bound holds against an adversary who sees every iterate
// w_1, …, w_T, so the run need not release only its last iterate; what must stay secret are the
// mixing weights u_k and the noise Δ_k. It requires every coordinate to be mixed every step with
// a box side of at least the declared width (the proof's reduction assumes it, and a coordinate with a zero gap gets no uniform): an optimizer that mixes
// only part of the model, or reveals the mixing weights, must declare MixWidth 0, for which the
// accountant reports the plain sampled-Gaussian bound.
type Accountant struct {
	opts     Options
	orders   []float64
	cache    *rdpCache
	entries  []entry
	index    map[Params]int
	steps    int64
	mixed    bool
	maxOrder int
	// refusal is why the run's declared update rule is outside Theorem 4.1 (CheckRun): the
	// accountant then composes the run's records but gives no ε, only this error.
	refusal error
}

// entry is one distinct step configuration and how many times it was composed.
type entry struct {
	rho   []float64
	count int64
}

// New returns a ModelMix accountant with default options for a run with the given settings.
// A run that declares no update rule is an error. A run whose update rule carries noisy
// gradients across steps (momentum, nesterov, adam: CheckRun's refusal) gets an accountant
// that composes its records and answers every Epsilon with that refusal, never a number, so
// that a report lists why the ModelMix bound is missing beside the certified ε of the same
// run.
func New(run accounting.Run) (*Accountant, error) {
	return NewWithOptions(run, Options{})
}

// NewWithOptions is New with options.
func NewWithOptions(run accounting.Run, opts Options) (*Accountant, error) {
	refusal := CheckRun(run)
	if refusal != nil && run.UpdateRule == "" {
		return nil, refusal
	}
	k, err := opts.maxOrder()
	if err != nil {
		return nil, err
	}
	return &Accountant{
		opts:     opts,
		orders:   Orders(k),
		cache:    newRDPCache(k),
		index:    make(map[Params]int),
		maxOrder: k,
		refusal:  refusal,
	}, nil
}

// CheckRun reports whether the run's declared settings are inside what ModelMix's privacy
// proof covers (Theorem 4.1 and its proof in Appendix C).
func CheckRun(run accounting.Run) error {
	if run.UpdateRule != "sgd" {
		// Momentum and Adam accumulate the hidden noisy gradients, which the
		// adversary cannot recover from the iterates because the mixing weights are secret, so
		// the per-step conditional analysis of Theorem 4.1 no longer applies.
		// Theorem 4.1 covers plain SGD only (Algorithm 1).
		return fmt.Errorf("modelmix: update rule %q: the guarantee covers plain SGD only (no momentum or Adam state carrying noisy gradients across steps, which Theorem 4.1's per-step analysis conditioned on the public iterates does not cover); use update rule sgd, or read ε from a certified accountant (rdp, pld)", run.UpdateRule)
	}
	return nil
}

// ParamsFromStep reads a step record in clip-norm units: Z = NoiseMultiplier and
// W = MixWidth/Sensitivity. It returns an error naming the assumption of Theorem 4.1 /
// Corollary 4.1 that the step breaks.
func ParamsFromStep(s accounting.Step) (Params, error) {
	if err := s.Validate(); err != nil {
		return Params{}, err
	}
	if s.Mechanism != accounting.Gaussian {
		return Params{}, fmt.Errorf("modelmix: mechanism %q: Theorem 4.1 covers isotropic Gaussian noise on the sum of clipped gradients only", s.Mechanism)
	}
	switch s.Sampling {
	case accounting.Poisson, accounting.FullBatch:
	default:
		// Theorem 4.1 needs Poisson sampling (sampling rate q).
		return Params{}, fmt.Errorf("modelmix: sampling %q: the guarantee needs Poisson sampling (each example included independently with rate q); use poisson sampling or another accountant", s.Sampling)
	}
	switch s.Neighbouring {
	case "", accounting.AddRemove:
	default:
		return Params{}, fmt.Errorf("modelmix: neighbouring relation %q: Theorem 4.1 is proved for add/remove neighbours only", s.Neighbouring)
	}
	if !(s.MixWidth >= 0) || math.IsInf(s.MixWidth, 0) {
		return Params{}, fmt.Errorf("modelmix: mixing width %v is not a finite number ≥ 0", s.MixWidth)
	}
	if s.LinfParts < 0 {
		return Params{}, fmt.Errorf("modelmix: l∞ parts %d is negative: use 0 or 1 for l2 clipping only", s.LinfParts)
	}
	if math.IsInf(s.Sensitivity, 0) || math.IsNaN(s.Sensitivity) || s.Sensitivity < 0 {
		return Params{}, fmt.Errorf("modelmix: sensitivity %v is not a finite number ≥ 0", s.Sensitivity)
	}
	if s.MixWidth > 0 && s.Sensitivity == 0 {
		return Params{}, errors.New("modelmix: a step with a mixing width must declare its sensitivity (the l2 clip norm), the unit of the mixing width")
	}
	if s.Sensitivity > 0 && s.NoiseStd != 0 {
		if z := s.NoiseStd / s.Sensitivity; math.Abs(z-s.NoiseMultiplier) > 1e-9*s.NoiseMultiplier {
			return Params{}, fmt.Errorf("modelmix: noise std %v / sensitivity %v = %v disagrees with noise multiplier %v: the step record is inconsistent", s.NoiseStd, s.Sensitivity, z, s.NoiseMultiplier)
		}
	}
	p := Params{SampleRate: s.SampleRate, NoiseMultiplier: s.NoiseMultiplier, LinfParts: s.LinfParts}
	if s.MixWidth > 0 {
		p.MixWidth = s.MixWidth / s.Sensitivity
	}
	return p, p.Validate()
}

// Name implements accounting.Accountant.
func (a *Accountant) Name() string { return Name }

// Label implements accounting.Accountant. It is Paper once a step with a mixing width has been
// composed: the reduction of Theorem 4.1 rests on three steps the paper does not prove for the
// Gaussian convolved with a uniform — that the add direction dominates the remove direction,
// that h_k(√x) is convex (the one-hot / Hamming-weight-p worst case), and that a wider box never
// costs more — all checked numerically over wide parameter ranges and by this package's tests. With no mixing the bound is the sampled-Gaussian RDP of
// Mironov, Talwar & Zhang (2019), and the label is Certified.
func (a *Accountant) Label() accounting.Label {
	if a.mixed {
		return accounting.Paper
	}
	return accounting.Certified
}

// Compose implements accounting.Accountant. A step outside what the theorem covers is refused
// with an error and leaves the accountant unchanged.
func (a *Accountant) Compose(s accounting.Step) error {
	p, err := ParamsFromStep(s)
	if err != nil {
		return err
	}
	p = p.canonical()
	i, ok := a.index[p]
	if !ok {
		rho, err := a.cache.get(p)
		if err != nil {
			return err
		}
		i = len(a.entries)
		a.entries = append(a.entries, entry{rho: rho})
		a.index[p] = i
	}
	n := int64(s.Steps())
	a.entries[i].count += n
	a.steps += n
	if p.MixWidth > 0 {
		a.mixed = true
	}
	return nil
}

// Steps returns the number of steps composed so far.
func (a *Accountant) Steps() int64 { return a.steps }

// RDP returns the composed Rényi DP curve: rdp[i] is the total RDP at order orders[i], rounded
// up. The slices are fresh copies.
func (a *Accountant) RDP() (orders, rdp []float64) {
	rdp = make([]float64, len(a.orders))
	for _, e := range a.entries {
		c := float64(e.count)
		for i, r := range e.rho {
			rdp[i] += c * r
		}
	}
	// A sum of n non-negative terms, each a rounded product, is within (n+1) ulps (relative)
	// of the exact sum: round it up by that much.
	up := 1 + float64(len(a.entries)+2)*0x1p-52
	for i := range rdp {
		rdp[i] *= up
	}
	return append([]float64(nil), a.orders...), rdp
}

// Epsilon implements accounting.Accountant: the smallest ε over the order grid such that the
// composed run is (ε, δ)-DP. The order it returns is the argmin; when it is the largest order of
// the grid, raising Options.MaxOrder may give a smaller ε.
func (a *Accountant) Epsilon(delta float64) (accounting.Guarantee, error) {
	g := accounting.Guarantee{Accountant: Name, Label: a.Label(), Delta: delta}
	if a.refusal != nil {
		g.Epsilon = math.NaN()
		return g, a.refusal
	}
	if !(delta > 0 && delta < 1) {
		return g, fmt.Errorf("modelmix: δ = %v is outside (0, 1)", delta)
	}
	if a.steps == 0 {
		return g, nil
	}
	orders, rdp := a.RDP()
	convert := accounting.RDPToEpsilon
	if a.opts.ClassicConversion {
		convert = accounting.RDPToEpsilonClassic
	}
	eps, order, err := convert(orders, rdp, delta)
	if err != nil {
		return g, fmt.Errorf("modelmix: %w", err)
	}
	if math.IsNaN(eps) || math.IsInf(eps, 0) {
		return g, fmt.Errorf("modelmix: ε is not finite after %d steps: add noise or use fewer steps", a.steps)
	}
	g.Epsilon, g.Order = eps, order
	return g, nil
}

// Clone implements accounting.Accountant. The clone shares the (immutable) cache of integrated
// steps and nothing else.
func (a *Accountant) Clone() accounting.Accountant {
	b := *a
	b.entries = append([]entry(nil), a.entries...)
	b.index = make(map[Params]int, len(a.index))
	for k, v := range a.index {
		b.index[k] = v
	}
	return &b
}

// MaxOrder returns the largest Rényi order of the accountant's grid.
func (a *Accountant) MaxOrder() int { return a.maxOrder }

var _ accounting.Accountant = (*Accountant)(nil)
