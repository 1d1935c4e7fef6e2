package ulr

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/rdp"
)

// Mode names.
const (
	Name           = "ulr"
	SimplifiedName = "ulr-simplified"
)

// Accountant composes Sampled-with-Rejection Gaussian steps in Rényi DP (Feng et al., "Forward Learning with Differential Privacy", Theorem
// 3.6: the RDP of T steps is T times one step's).
type Accountant struct {
	simplified bool
	orders     []float64
	rdp        []float64
	cache      map[mechanism][]float64
	steps      int
	label      accounting.Label
}

// mechanism identifies one step's RDP curve.
type mechanism struct {
	q, sigma       float64
	minBatch, nbar int
}

// New returns the ulr accountant: log1p of the rejection term plus the exact sampled-Gaussian
// RDP.
func New(run accounting.Run) (*Accountant, error) { return newAccountant(false), nil }

// NewSimplified returns the ulr-simplified accountant: the paper's printed Eq. (10) at the
// orders Theorem 3.5 covers.
func NewSimplified(run accounting.Run) (*Accountant, error) { return newAccountant(true), nil }

func newAccountant(simplified bool) *Accountant {
	o := rdp.DefaultOrders()
	return &Accountant{simplified: simplified, orders: o, rdp: make([]float64, len(o)),
		cache: map[mechanism][]float64{}, label: accounting.Certified}
}

// Name implements accounting.Accountant.
func (a *Accountant) Name() string {
	if a.simplified {
		return SimplifiedName
	}
	return Name
}

// Label implements accounting.Accountant: paper once a step declared DP-ULR's likelihood-ratio
// noise, certified otherwise.
func (a *Accountant) Label() accounting.Label { return a.label }

// Compose implements accounting.Accountant. It accepts Poisson-with-rejection steps under the
// add/remove relation that declare the dataset size; a refused step leaves the accountant
// unchanged.
func (a *Accountant) Compose(s accounting.Step) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Mechanism != accounting.Gaussian && s.Mechanism != accounting.SampledWithRejectionGaussian {
		return fmt.Errorf("%s: mechanism %q is not a Gaussian release", a.Name(), s.Mechanism)
	}
	if s.Sampling != accounting.PoissonWithRejection {
		return &accounting.RequirementError{Accountant: a.Name(), Theorem: "Theorem 3.6",
			Reason: fmt.Sprintf("%s sampling is not Poisson sampling with rejection (Theorem 3.6)", s.Sampling),
			Fix:    "set %s to poisson-with-rejection with %s, or use the rdp accountant for plain Poisson sampling", Fields: []string{"Step.Sampling", "Step.MinBatchSize"}}
	}
	if s.Neighbouring == accounting.ReplaceOne {
		return fmt.Errorf("%s: Theorem 3.6 is stated for add/remove neighbours; declare add-remove", a.Name())
	}
	if s.DatasetSize < 2 {
		return fmt.Errorf("%s: the rejection term needs the dataset size (got %d): give --dataset-size", a.Name(), s.DatasetSize)
	}
	// The smaller of two add/remove neighbours has N−1 examples: N̄ = N−1 bounds every
	// dataset the guarantee speaks of from below.
	m := mechanism{q: s.SampleRate, sigma: s.NoiseMultiplier, minBatch: s.MinBatchSize, nbar: s.DatasetSize - 1}
	curve, ok := a.cache[m]
	if !ok {
		var err error
		if curve, err = a.curve(m); err != nil {
			return err
		}
		a.cache[m] = curve
	}
	c := float64(s.Steps())
	for i, r := range curve {
		a.rdp[i] += c * r
	}
	a.steps += s.Steps()
	if s.Mechanism == accounting.SampledWithRejectionGaussian {
		a.label = accounting.Paper
	}
	return nil
}

// curve is one step's RDP at every order; +Inf marks an order the theorem does not cover.
func (a *Accountant) curve(m mechanism) ([]float64, error) {
	x, err := RejectionTerm(m.q, m.minBatch, m.nbar)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(a.orders))
	if a.simplified {
		if m.q > 0.2 || m.sigma < 4 {
			return nil, fmt.Errorf("%s: Theorem 3.5 needs q ≤ 1/5 and σ0 ≥ 4, got q = %v, σ0 = %v: use the ulr accountant (exact sampled-Gaussian RDP), valid for every q and σ0", a.Name(), m.q, m.sigma)
		}
		valid := 0
		for i, alpha := range a.orders {
			if !theorem35Holds(m.q, m.sigma, alpha) {
				out[i] = math.Inf(1)
				continue
			}
			out[i] = x + 2*m.q*m.q*alpha/(m.sigma*m.sigma)
			valid++
		}
		if valid == 0 {
			return nil, fmt.Errorf("%s: no order on the grid satisfies Theorem 3.5 for q = %v, σ0 = %v: use the ulr accountant", a.Name(), m.q, m.sigma)
		}
		return out, nil
	}
	rej := math.Log1p(x)
	for i, alpha := range a.orders {
		r, err := rdp.SampledGaussian(m.q, m.sigma, alpha)
		if err != nil {
			return nil, err
		}
		if math.IsNaN(r) || r < 0 {
			return nil, fmt.Errorf("%s: numerical failure at order %v (q = %v, σ0 = %v)", a.Name(), alpha, m.q, m.sigma)
		}
		out[i] = rej + r
	}
	return out, nil
}

// theorem35Holds reports whether order alpha is in Theorem 3.5's range (Mironov, Talwar & Zhang
// 2019, Theorem 11) for rate q ≤ 1/5 and σ ≥ 4: with A = ln(1 + 1/(q(α−1))),
// α ≤ σ²A/2 − 2 ln σ and α ≤ (σ²A²/2 − ln 5 − 2 ln σ)/(A + ln(qα) + 1/(2σ²)).
func theorem35Holds(q, sigma, alpha float64) bool {
	if !(alpha > 1) {
		return false
	}
	s2 := sigma * sigma
	A := math.Log1p(1 / (q * (alpha - 1)))
	if alpha > s2*A/2-2*math.Log(sigma) {
		return false
	}
	den := A + math.Log(q*alpha) + 1/(2*s2)
	return den > 0 && alpha <= (s2*A*A/2-math.Log(5)-2*math.Log(sigma))/den
}

// Epsilon implements accounting.Accountant with the conversion of accounting.RDPToEpsilon.
func (a *Accountant) Epsilon(delta float64) (accounting.Guarantee, error) {
	g := accounting.Guarantee{Accountant: a.Name(), Label: a.label, Delta: delta}
	if a.steps == 0 {
		if !(delta > 0 && delta < 1) {
			return g, fmt.Errorf("%s: δ = %v is outside (0, 1)", a.Name(), delta)
		}
		return g, nil
	}
	eps, order, err := accounting.RDPToEpsilon(a.orders, a.rdp, delta)
	if err != nil {
		return g, err
	}
	g.Epsilon, g.Order = eps, order
	return g, nil
}

// Clone implements accounting.Accountant.
func (a *Accountant) Clone() accounting.Accountant {
	c := *a
	c.rdp, c.cache = slices.Clone(a.rdp), maps.Clone(a.cache)
	return &c
}
