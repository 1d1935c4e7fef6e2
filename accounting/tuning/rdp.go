package tuning

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/dptrain/dptrain/accounting"
)

// RDP returns the Rényi DP, at each of orders (every one > 1), of a search that runs K ~ dist
// candidates and releases only the best one, where candidate(λ) is the RDP at order λ of one
// candidate run. It evaluates candidate at every order and returns RDPFromCurve.
func RDP(candidate func(order float64) float64, dist Distribution, orders []float64) ([]float64, error) {
	curve, err := evaluate(candidate, orders)
	if err != nil {
		return nil, err
	}
	return RDPFromCurve(orders, curve, dist)
}

// evaluate returns candidate's RDP at each order.
func evaluate(candidate func(order float64) float64, orders []float64) ([]float64, error) {
	if candidate == nil {
		return nil, errors.New("tuning: no candidate RDP function: pass the RDP curve of one candidate run")
	}
	curve := make([]float64, len(orders))
	for i, a := range orders {
		curve[i] = candidate(a)
	}
	return curve, nil
}

// RDPFromCurve is RDP for a candidate whose RDP at orders[i] is rdp[i] (for example the curve of
// an rdp.Accountant that composed one candidate run). rdp[i] may be +Inf where the candidate has
// no bound at that order; it must not be NaN or negative, and must be finite at some order.
//
// For the truncated negative binomial it applies Papernot & Steinke (2022), Theorem 2, with λ̂
// optimised over 1 and the orders; for Poisson(μ), Theorem 6, with the candidate's (ε̂, δ̂)-DP
// bound converted from its RDP curve. Each value is an upper bound rounded up, and the curve is
// then replaced by its non-decreasing envelope from above: a mechanism that is (λ', ε')-RDP is
// (λ, ε')-RDP for every λ < λ' (Rényi divergences do not decrease with the order).
func RDPFromCurve(orders, rdp []float64, dist Distribution) ([]float64, error) {
	if err := dist.Validate(); err != nil {
		return nil, err
	}
	if err := checkCurve(orders, rdp); err != nil {
		return nil, err
	}
	var out []float64
	switch dist.family {
	case truncatedNegativeBinomial:
		out = truncatedNegativeBinomialRDP(orders, rdp, dist)
	case poisson:
		out = poissonRDP(orders, rdp, dist.mu)
	}
	envelope(orders, out)
	return out, nil
}

// checkCurve refuses orders and candidate RDP values the theorems do not cover.
func checkCurve(orders, rdp []float64) error {
	if len(orders) != len(rdp) {
		return fmt.Errorf("tuning: %d orders but %d candidate RDP values", len(orders), len(rdp))
	}
	if len(orders) == 0 {
		return errors.New("tuning: no orders: pass the Rényi orders to evaluate, for example rdp.DefaultOrders()")
	}
	finite := false
	for i, a := range orders {
		if !(a > 1) || math.IsInf(a, 1) {
			return fmt.Errorf("tuning: order %v is not a finite number above 1: the theorems bound RDP at orders λ ∈ (1, ∞)", a)
		}
		switch r := rdp[i]; {
		case math.IsNaN(r) || r < 0:
			return fmt.Errorf("tuning: candidate RDP at order %v is %v: it must be a non-negative number, or +Inf where the candidate has no bound; check the candidate's RDP function", a, r)
		case !math.IsInf(r, 1):
			finite = true
		}
	}
	if !finite {
		return errors.New("tuning: candidate RDP is +Inf at every order: one candidate run has no finite RDP bound, so neither has the search; add noise or shorten the candidate run")
	}
	return nil
}

// truncatedNegativeBinomialRDP is Papernot & Steinke (2022), Theorem 2: if one candidate is
// (λ, ε)-RDP and (λ̂, ε̂)-RDP, with λ ∈ (1, ∞) and λ̂ ∈ [1, ∞), the search with K ~ D_{η,γ} is
// (λ, ε')-RDP with
//
//	ε' = ε + (1+η)(1 − 1/λ̂)ε̂ + (1+η)·log(1/γ)/λ̂ + log(E[K])/(λ−1).
//
// The λ̂ terms do not depend on λ: their minimum c over λ̂ ∈ {1} ∪ orders is taken once. At
// λ̂ = 1 the ε̂ term vanishes (ε̂ is then the KL divergence, finite since it is at most the
// candidate's RDP at any order); this value is also the limit λ̂ ↓ 1 of bounds that hold for
// every λ̂ > 1, so it stands even where λ̂ = 1 itself were excluded.
func truncatedNegativeBinomialRDP(orders, rdp []float64, d Distribution) []float64 {
	logInvGamma := -math.Log(d.gamma)
	best := logInvGamma // λ̂ = 1
	for j, hat := range orders {
		if math.IsInf(rdp[j], 1) {
			continue
		}
		if v := upperSum((1-1/hat)*rdp[j], logInvGamma/hat); v < best {
			best = v
		}
	}
	c := accounting.RoundUp((1 + d.eta) * best)
	logMean := d.upperLogMean()
	out := make([]float64, len(orders))
	for i, lambda := range orders {
		if math.IsInf(rdp[i], 1) {
			out[i] = math.Inf(1)
			continue
		}
		out[i] = math.Max(upperSum(rdp[i], c, logMean/(lambda-1)), 0)
	}
	return out
}

// poissonRDP is Papernot & Steinke (2022), Theorem 6: if one candidate is (λ, ε)-RDP and
// (ε̂, δ̂)-DP with e^ε̂ ≤ 1 + 1/(λ−1), the search with K ~ Poisson(μ) is (λ, ε')-RDP with
//
//	ε' = ε + μ·δ̂ + log(μ)/(λ−1).
//
// δ̂ decreases in ε̂, so ε̂ is the largest the condition allows, log(1 + 1/(λ−1)) rounded down,
// and δ̂ the candidate's δ at ε̂ from its RDP curve (deltaAt), rounded up.
func poissonRDP(orders, rdp []float64, mu float64) []float64 {
	logMu := upperSum(math.Log(mu))
	conv := newDeltaConverter(orders, rdp)
	out := make([]float64, len(orders))
	for i, lambda := range orders {
		if math.IsInf(rdp[i], 1) {
			out[i] = math.Inf(1)
			continue
		}
		epsHat := roundDown(math.Log1p(1 / (lambda - 1)))
		deltaHat := conv.deltaAt(epsHat)
		out[i] = math.Max(upperSum(rdp[i], accounting.RoundUp(mu*deltaHat), logMu/(lambda-1)), 0)
	}
	return out
}

// deltaConverter turns an RDP curve into the δ of an (ε, δ)-DP guarantee for any ε ≥ 0.
type deltaConverter struct {
	orders, rdp []float64
	// shift[i] = (α−1)·log(1 − 1/α) − log α, the ε-free part of the conversion at orders[i].
	shift []float64
	// kl is an upper bound on the KL divergence: the smallest finite RDP on the curve.
	kl float64
}

func newDeltaConverter(orders, rdp []float64) *deltaConverter {
	c := &deltaConverter{orders: orders, rdp: rdp, shift: make([]float64, len(orders)), kl: math.Inf(1)}
	for i, a := range orders {
		c.shift[i] = (a-1)*math.Log1p(-1/a) - math.Log(a)
		c.kl = math.Min(c.kl, rdp[i])
	}
	return c
}

// deltaAt returns δ, rounded up, such that the curve's mechanism is (eps, δ)-DP: the smaller of
//
//   - the minimum over orders α of exp((α−1)(rdp(α) − ε + log(1 − 1/α)) − log α), the
//     conversion of Canonne, Kamath & Steinke (2020), Proposition 12, of which
//     accounting.RDPToEpsilon is the inverse, and
//   - sqrt(1 − exp(−KL)), KL ≤ rdp(α) for every α > 1, which bounds the total variation
//     distance (Bretagnolle & Huber 1979) and so δ at every ε ≥ 0,
//
// and at most 1.
func (c *deltaConverter) deltaAt(eps float64) float64 {
	logDelta := math.Inf(1)
	for i, a := range c.orders {
		if r := c.rdp[i]; !math.IsInf(r, 1) {
			logDelta = math.Min(logDelta, upperSum((a-1)*r, -(a-1)*eps, c.shift[i]))
		}
	}
	kl := accounting.RoundUp(math.Sqrt(-math.Expm1(-c.kl)))
	return math.Min(1, math.Min(kl, accounting.RoundUp(math.Exp(logDelta))))
}

// envelope replaces out[i] by the smallest out[j] over orders[j] ≥ orders[i].
func envelope(orders, out []float64) {
	idx := make([]int, len(orders))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return orders[idx[a]] < orders[idx[b]] })
	m := math.Inf(1)
	for k := len(idx) - 1; k >= 0; k-- {
		i := idx[k]
		m = math.Min(m, out[i])
		out[i] = m
	}
}

// upperSum returns the sum of terms moved up by (n+4) units of 2⁻⁵² of the sum of their
// magnitudes, then RoundUp: an upper bound on the exact sum when each term is within a few
// units in the last place of its exact value, however much the terms cancel.
func upperSum(terms ...float64) float64 {
	var s, m float64
	for _, t := range terms {
		s += t
		m += math.Abs(t)
	}
	return accounting.RoundUp(s + m*float64(len(terms)+4)*0x1p-52)
}

// roundDown is the mirror of accounting.RoundUp.
func roundDown(x float64) float64 { return -accounting.RoundUp(-x) }

// upperLogMean is log E[K] rounded up.
func (d Distribution) upperLogMean() float64 { return upperSum(d.logMeanTerms()...) }
