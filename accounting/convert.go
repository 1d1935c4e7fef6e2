package accounting

import (
	"errors"
	"fmt"
	"math"
)

// RDPToEpsilon converts a Rényi DP curve — rdp[i] is the RDP ε at order orders[i] > 1 — to the
// smallest (ε, δ)-DP guarantee over the orders, and returns ε with the order that gave it.
//
// It uses the conversion of Canonne, Kamath & Steinke (2020), Proposition 12 (also Asoodeh et
// al. 2021), which for every order α > 1 gives
//
//	ε = rdp(α) + log((α−1)/α) − (log δ + log α)/(α − 1),
//
// tighter than the classic ε = rdp(α) + log(1/δ)/(α − 1) of Mironov (2017), Proposition 3.
// Orders whose RDP is +Inf are skipped; ε is rounded up (RoundUp) and clamped below at 0.
func RDPToEpsilon(orders, rdp []float64, delta float64) (eps, order float64, err error) {
	if len(orders) != len(rdp) {
		return 0, 0, fmt.Errorf("accounting: %d orders but %d RDP values", len(orders), len(rdp))
	}
	if !(delta > 0 && delta < 1) {
		return 0, 0, fmt.Errorf("accounting: δ = %v is outside (0, 1)", delta)
	}
	eps, order = math.Inf(1), 0
	logDelta := math.Log(delta)
	for i, a := range orders {
		r := rdp[i]
		if !(a > 1) || math.IsNaN(r) {
			return 0, 0, fmt.Errorf("accounting: invalid RDP point (α = %v, ε = %v)", a, r)
		}
		if math.IsInf(r, 1) {
			continue
		}
		if r < 0 {
			return 0, 0, fmt.Errorf("accounting: negative RDP %v at order %v", r, a)
		}
		e := r + math.Log1p(-1/a) - (logDelta+math.Log(a))/(a-1)
		if e < eps {
			eps, order = e, a
		}
	}
	if math.IsInf(eps, 1) {
		return 0, 0, errors.New("accounting: RDP is infinite at every order: no finite ε; add noise or use fewer steps")
	}
	return math.Max(RoundUp(eps), 0), order, nil
}

// RDPToEpsilonClassic is Mironov (2017), Proposition 3: ε = min over α of rdp(α) + log(1/δ)/(α−1).
// It is looser than RDPToEpsilon and kept for comparison with older reports.
func RDPToEpsilonClassic(orders, rdp []float64, delta float64) (eps, order float64, err error) {
	if len(orders) != len(rdp) {
		return 0, 0, fmt.Errorf("accounting: %d orders but %d RDP values", len(orders), len(rdp))
	}
	if !(delta > 0 && delta < 1) {
		return 0, 0, fmt.Errorf("accounting: δ = %v is outside (0, 1)", delta)
	}
	eps = math.Inf(1)
	for i, a := range orders {
		if !(a > 1) || math.IsNaN(rdp[i]) || rdp[i] < 0 {
			return 0, 0, fmt.Errorf("accounting: invalid RDP point (α = %v, ε = %v)", a, rdp[i])
		}
		if e := rdp[i] + math.Log(1/delta)/(a-1); e < eps {
			eps, order = e, a
		}
	}
	if math.IsInf(eps, 1) {
		return 0, 0, errors.New("accounting: RDP is infinite at every order: no finite ε")
	}
	return RoundUp(eps), order, nil
}
