package sgld

import (
	"errors"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// linearRDPToEpsilon converts the RDP curve ε(α) = α·ρ to (ε, δ)-DP: the smaller of
// accounting.RDPToEpsilon on a grid of orders around Mironov's optimum and Mironov's closed
// form ρ + 2·sqrt(ρ·log(1/δ)) (Proposition 2.1 minimised over real α > 1). Every candidate is a
// valid bound, so the minimum is one; the result is rounded up by a few ulps.
func linearRDPToEpsilon(rho, delta float64) (eps, order float64, err error) {
	if !(delta > 0 && delta < 1) {
		return 0, 0, errors.New("δ is outside (0, 1)")
	}
	if math.IsNaN(rho) || math.IsInf(rho, 0) || rho < 0 {
		return 0, 0, errors.New("ρ is not a finite non-negative number: no finite ε")
	}
	if rho == 0 {
		return 0, 0, nil
	}
	logInvDelta := -math.Log(delta)
	star := 1 + math.Sqrt(logInvDelta/rho)
	eps, order = rho+2*math.Sqrt(rho*logInvDelta), star

	// Orders α = 1 + (α*−1)·r^i for r = 1.002, i ∈ [−1500, 1500]: ±20× around the optimum.
	const half = 1500
	orders := make([]float64, 0, 2*half+1)
	rdp := make([]float64, 0, 2*half+1)
	for i := -half; i <= half; i++ {
		o := 1 + (star-1)*math.Pow(1.002, float64(i))
		if o <= 1 || math.IsInf(o, 1) {
			continue
		}
		orders = append(orders, o)
		rdp = append(rdp, o*rho)
	}
	if e, o, err := accounting.RDPToEpsilon(orders, rdp, delta); err == nil && e < eps {
		eps, order = e, o
	}
	eps = roundUp(eps)
	if math.IsNaN(eps) || math.IsInf(eps, 0) {
		return 0, 0, errors.New("ε overflowed: no finite guarantee")
	}
	return eps, order, nil
}

// roundUp moves x up by four ulps, against the few roundings of the computation.
func roundUp(x float64) float64 {
	for range 4 {
		x = math.Nextafter(x, math.Inf(1))
	}
	return x
}
