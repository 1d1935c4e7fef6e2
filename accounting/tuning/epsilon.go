package tuning

import (
	"context"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/rdp"
)

// Name is the accountant name the guarantees of a search carry.
const Name = "tuning"

// Epsilon returns the (ε, δ)-DP guarantee of the search: RDP converted with
// accounting.RDPToEpsilon, the conversion the rdp accountant uses. orders nil means
// rdp.DefaultOrders(); they serve both as the orders λ of the conversion and as the grid of λ̂.
// The label is Certified: the parameters are checked, and the theorems hold for any candidate
// whose RDP curve is candidate (see the package documentation for what the search must do).
func Epsilon(candidate func(order float64) float64, dist Distribution, orders []float64, delta float64) (accounting.Guarantee, error) {
	if orders == nil {
		orders = rdp.DefaultOrders()
	}
	r, err := RDP(candidate, dist, orders)
	if err != nil {
		return accounting.Guarantee{}, err
	}
	return guarantee(Name, orders, r, delta)
}

// guarantee converts an RDP curve to a certified (ε, δ) guarantee named name.
func guarantee(name string, orders, r []float64, delta float64) (accounting.Guarantee, error) {
	eps, order, err := accounting.RDPToEpsilon(orders, r, delta)
	if err != nil {
		return accounting.Guarantee{}, fmt.Errorf("tuning: %w", err)
	}
	return accounting.Guarantee{Accountant: name, Label: accounting.Certified, Epsilon: eps, Delta: delta, Order: order}, nil
}

// Overhead is what a search costs over a single candidate run, at the same δ.
type Overhead struct {
	// Single is one candidate run alone (its RDP curve converted as the search's is).
	Single accounting.Guarantee
	// Search is the search that runs K candidates and releases the best one.
	Search accounting.Guarantee
	// Mean is E[K], the expected number of candidates.
	Mean float64
	// Extra is Search.Epsilon − Single.Epsilon: the ε tuning adds. It is the difference of two
	// upper bounds, for planning, not itself a bound.
	Extra float64
}

// String reads "tuning with E[K] = 10 candidates costs ε = 6.63 − 4.01 = 2.62 more at δ = 1e-05".
func (o Overhead) String() string {
	return fmt.Sprintf("tuning with E[K] = %.4g candidates costs ε = %.4g − %.4g = %.4g more at δ = %g",
		o.Mean, o.Search.Epsilon, o.Single.Epsilon, o.Extra, o.Search.Delta)
}

// Cost returns, ahead of any run, what the search over K ~ dist candidates with the given
// candidate RDP curve costs over a single candidate run, at δ. orders nil means
// rdp.DefaultOrders().
func Cost(candidate func(order float64) float64, dist Distribution, orders []float64, delta float64) (Overhead, error) {
	if orders == nil {
		orders = rdp.DefaultOrders()
	}
	curve, err := evaluate(candidate, orders)
	if err != nil {
		return Overhead{}, err
	}
	r, err := RDPFromCurve(orders, curve, dist)
	if err != nil {
		return Overhead{}, err
	}
	search, err := guarantee(Name, orders, r, delta)
	if err != nil {
		return Overhead{}, err
	}
	single, err := guarantee("single candidate", orders, curve, delta)
	if err != nil {
		return Overhead{}, err
	}
	mean, err := dist.Mean()
	if err != nil {
		return Overhead{}, err
	}
	return Overhead{Single: single, Search: search, Mean: mean, Extra: search.Epsilon - single.Epsilon}, nil
}

// SampledGaussianCurve returns the RDP curve on orders of one candidate run of steps steps of
// the Poisson-sampled Gaussian mechanism with sample rate q and noise multiplier sigma
// (rdp.SampledGaussian composed steps times, rounded up), the candidate of a DP-SGD search.
func SampledGaussianCurve(q, sigma float64, steps int, orders []float64) ([]float64, error) {
	if steps < 1 {
		return nil, fmt.Errorf("tuning: a candidate run of %d steps: it must run at least one step", steps)
	}
	if !(q > 0 && q <= 1) {
		return nil, fmt.Errorf("tuning: sample rate q = %v is outside (0, 1]", q)
	}
	if !(sigma > 0) || math.IsInf(sigma, 1) {
		return nil, fmt.Errorf("tuning: noise multiplier σ = %v must be a positive finite number", sigma)
	}
	curve := make([]float64, len(orders))
	for i, a := range orders {
		r, err := rdp.SampledGaussian(q, sigma, a)
		if err != nil {
			return nil, fmt.Errorf("tuning: %w", err)
		}
		curve[i] = accounting.RoundUp(float64(steps) * r)
	}
	return curve, nil
}

// CalibrateSampledGaussian returns the smallest noise multiplier σ (accounting.CalibrateNoise,
// to a relative 1e-4) at which a search over K ~ dist candidates, each a run of steps steps of
// the Poisson-sampled Gaussian mechanism with sample rate q and noise multiplier σ, meets
// (target, delta), with the search's guarantee re-checked at σ. orders nil means
// rdp.DefaultOrders().
func CalibrateSampledGaussian(dist Distribution, q float64, steps int, target, delta float64, orders []float64) (float64, accounting.Guarantee, error) {
	if orders == nil {
		orders = rdp.DefaultOrders()
	}
	if err := dist.Validate(); err != nil {
		return 0, accounting.Guarantee{}, err
	}
	if !(delta > 0 && delta < 1) {
		return 0, accounting.Guarantee{}, fmt.Errorf("tuning: δ = %v is outside (0, 1)", delta)
	}
	at := func(sigma float64) (accounting.Guarantee, error) {
		curve, err := SampledGaussianCurve(q, sigma, steps, orders)
		if err != nil {
			return accounting.Guarantee{}, err
		}
		r, err := RDPFromCurve(orders, curve, dist)
		if err != nil {
			return accounting.Guarantee{}, err
		}
		return guarantee(Name, orders, r, delta)
	}
	// Parameters that are refused at every σ are reported as they are, not as unreachable.
	if _, err := SampledGaussianCurve(q, 1, steps, orders[:0]); err != nil {
		return 0, accounting.Guarantee{}, err
	}
	sigma, err := accounting.CalibrateNoise(context.Background(), func(s float64) (float64, error) {
		g, err := at(s)
		return g.Epsilon, err
	}, target)
	if err != nil {
		return 0, accounting.Guarantee{}, fmt.Errorf("tuning: %w", err)
	}
	g, err := at(sigma)
	if err != nil {
		return 0, accounting.Guarantee{}, err
	}
	if g.Epsilon > target {
		return 0, accounting.Guarantee{}, fmt.Errorf("tuning: calibration failed: σ = %g gives ε = %g above the target %g", sigma, g.Epsilon, target)
	}
	return sigma, g, nil
}
