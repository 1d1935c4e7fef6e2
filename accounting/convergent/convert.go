package convergent

import (
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// roundUp is accounting.RoundUp, against the roundings of the bound's computation.
func roundUp(x float64) float64 { return accounting.RoundUp(x) }

// linearToEpsilon converts the RDP curve ε(α) = ρ·α of the full-batch and cyclic bounds
// (linear in α once the noise split is eliminated) to (ε, δ) with accounting.RDPToEpsilon on a grid of orders
// around Mironov's optimum α* = 1 + sqrt(log(1/δ)/ρ) (Mironov, "Rényi Differential Privacy", Prop. 3; Chien & Li give no conversion). Every order gives a valid
// bound, so the grid only costs tightness.
func linearToEpsilon(rho, delta float64) (eps, order float64, err error) {
	if !(delta > 0 && delta < 1) {
		return 0, 0, fmt.Errorf("δ = %v is outside (0, 1)", delta)
	}
	if math.IsNaN(rho) || math.IsInf(rho, 0) || rho < 0 {
		return 0, 0, errors.New("ρ is not a finite non-negative number: no finite ε")
	}
	if rho == 0 {
		return 0, 0, nil
	}
	// Orders α = 1 + (α*−1)·1.01^i, i ∈ [−300, 300]: ±20× around the optimum at 1% spacing.
	star := 1 + math.Sqrt(-math.Log(delta)/rho)
	const half, ratio = 300, 1.01
	orders := make([]float64, 0, 2*half+1)
	rdp := make([]float64, 0, 2*half+1)
	x := (star - 1) * math.Pow(ratio, -half)
	for range 2*half + 1 {
		if o := 1 + x; o > 1 && !math.IsInf(o, 1) {
			orders = append(orders, o)
			rdp = append(rdp, roundUp(o*rho))
		}
		x *= ratio
	}
	eps, order, err = accounting.RDPToEpsilon(orders, rdp, delta)
	if err != nil {
		return 0, 0, err
	}
	return roundUp(eps), order, nil
}

// curveToEpsilon converts RDP values at the given orders.
func curveToEpsilon(orders, rdp []float64, delta float64) (eps, order float64, err error) {
	up := make([]float64, len(rdp))
	for i, r := range rdp {
		if math.IsNaN(r) || r < 0 {
			return 0, 0, fmt.Errorf("RDP %v at order %v is not a non-negative number", r, orders[i])
		}
		up[i] = roundUp(r)
	}
	eps, order, err = accounting.RDPToEpsilon(orders, up, delta)
	if err != nil {
		return 0, 0, err
	}
	return roundUp(eps), order, nil
}
