package rdp

import (
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// Name is the accountant's mode name.
const Name = "rdp"

// Accountant composes Gaussian steps in Rényi DP. Compose costs one multiply-add per order once
// a mechanism's curve is cached (the first step of each distinct (q, σ) computes it).
type Accountant struct {
	orders  []float64
	rdp     []float64
	cache   map[mechanism][]float64
	steps   int
	classic bool
}

// mechanism identifies a per-step RDP curve: the sampling analysis, q and the effective noise
// multiplier (over the sensitivity of the relation the analysis uses).
type mechanism struct {
	withoutReplacement bool
	q, sigma           float64
}

// Options configures an Accountant.
type Options struct {
	// Orders overrides DefaultOrders.
	Orders []float64
	// Classic selects Mironov's conversion ε = rdp + log(1/δ)/(α−1) instead of the tighter
	// one of Canonne, Kamath & Steinke (2020), for comparison with older reports.
	Classic bool
}

// New returns an accountant on the default order grid. The run is accepted whatever its
// release policy: composition covers every intermediate iterate being released.
func New(run accounting.Run) (*Accountant, error) { return NewWithOptions(run, Options{}) }

// NewWithOptions returns an accountant with the given options.
func NewWithOptions(_ accounting.Run, o Options) (*Accountant, error) {
	orders := o.Orders
	if orders == nil {
		orders = DefaultOrders()
	}
	for _, a := range orders {
		if !(a > 1) {
			return nil, fmt.Errorf("rdp: order %v must exceed 1", a)
		}
	}
	return &Accountant{orders: append([]float64(nil), orders...), rdp: make([]float64, len(orders)),
		cache: map[mechanism][]float64{}, classic: o.Classic}, nil
}

// Name implements accounting.Accountant.
func (a *Accountant) Name() string { return Name }

// Label implements accounting.Accountant.
func (a *Accountant) Label() accounting.Label { return accounting.Certified }

// Steps returns the number of steps composed.
func (a *Accountant) Steps() int { return a.steps }

// Curve returns the orders and the composed RDP at each.
func (a *Accountant) Curve() (orders, rdp []float64) {
	return append([]float64(nil), a.orders...), append([]float64(nil), a.rdp...)
}

// Compose implements accounting.Accountant. It accepts Gaussian steps with full batch
// (add/remove, or replace-one with the sensitivity doubled), Poisson sampling (add/remove,
// Mironov, Talwar & Zhang 2019) or fixed-size sampling without replacement (replace-one, Wang,
// Balle & Kasiviswanathan 2019, Theorem 9). A refused step leaves the accountant unchanged.
func (a *Accountant) Compose(s accounting.Step) error {
	m, err := mechanismOf(s)
	if err != nil {
		return err
	}
	curve, ok := a.cache[m]
	if !ok {
		curve = make([]float64, len(a.orders))
		for i, alpha := range a.orders {
			rdp := SampledGaussian
			if m.withoutReplacement {
				rdp = SampledWithoutReplacementGaussian
			}
			r, err := rdp(m.q, m.sigma, alpha)
			if err != nil {
				return err
			}
			if math.IsNaN(r) || r < 0 {
				return fmt.Errorf("rdp: numerical failure at order %v (q = %v, σ = %v)", alpha, m.q, m.sigma)
			}
			curve[i] = r
		}
		a.cache[m] = curve
	}
	c := float64(s.Steps())
	for i, r := range curve {
		a.rdp[i] += c * r
	}
	a.steps += s.Steps()
	return nil
}

// mechanismOf checks that this accountant's analysis covers s and returns its (q, σ).
func mechanismOf(s accounting.Step) (mechanism, error) {
	if err := s.Validate(); err != nil {
		return mechanism{}, err
	}
	if s.Mechanism != accounting.Gaussian {
		return mechanism{}, fmt.Errorf("rdp: mechanism %q is not the Gaussian mechanism", s.Mechanism)
	}
	sigma := s.NoiseMultiplier
	switch s.Sampling {
	case accounting.FullBatch:
		if s.Neighbouring == accounting.ReplaceOne {
			sigma /= 2 // replacing one example moves the sum by up to 2C
		}
		return mechanism{q: 1, sigma: sigma}, nil
	case accounting.Poisson:
		if s.Neighbouring == accounting.ReplaceOne {
			return mechanism{}, errors.New("rdp: Poisson sampling is analysed for add/remove neighbours; declare add-remove")
		}
		return mechanism{q: s.SampleRate, sigma: sigma}, nil
	case accounting.WithoutReplacement:
		if s.Neighbouring != accounting.ReplaceOne {
			return mechanism{}, errors.New("rdp: sampling without replacement is analysed for replace-one neighbours (Wang, Balle & Kasiviswanathan 2019); declare replace-one, or use Poisson sampling for add/remove")
		}
		// Replacing one example moves the sum by up to 2C: the Gaussian's multiplier over
		// that sensitivity is σ/2.
		return mechanism{withoutReplacement: true, q: s.SampleRate, sigma: sigma / 2}, nil
	default:
		return mechanism{}, fmt.Errorf("rdp: %s sampling is not covered by the sampled-Gaussian analysis (Mironov, Talwar & Zhang 2019 assume Poisson sampling, Wang, Balle & Kasiviswanathan 2019 fresh fixed-size subsets): use poisson or without-replacement sampling, or a hidden-state accountant that covers it", s.Sampling)
	}
}

// Epsilon implements accounting.Accountant.
func (a *Accountant) Epsilon(delta float64) (accounting.Guarantee, error) {
	g := accounting.Guarantee{Accountant: Name, Label: accounting.Certified, Delta: delta}
	if a.steps == 0 {
		if !(delta > 0 && delta < 1) {
			return g, fmt.Errorf("rdp: δ = %v is outside (0, 1)", delta)
		}
		return g, nil
	}
	conv := accounting.RDPToEpsilon
	if a.classic {
		conv = accounting.RDPToEpsilonClassic
	}
	eps, order, err := conv(a.orders, a.rdp, delta)
	if err != nil {
		return g, err
	}
	g.Epsilon, g.Order = eps, order
	return g, nil
}

// Clone implements accounting.Accountant. The cache of per-mechanism curves is shared; it is
// never mutated after an entry is written, only added to, so clones must not be used
// concurrently with the original.
func (a *Accountant) Clone() accounting.Accountant {
	c := *a
	c.rdp = append([]float64(nil), a.rdp...)
	c.cache = make(map[mechanism][]float64, len(a.cache))
	for k, v := range a.cache {
		c.cache[k] = v
	}
	return &c
}
