package accounting

import (
	"fmt"
	"math"
)

// CalibrateNoise returns the smallest noise multiplier σ, to a relative tolerance of 1e-4, whose
// ε = eps(σ) is at most target. eps must decrease in σ (every accountant here does). It
// brackets by doubling or halving from σ = 1, then bisects geometrically, and returns the upper
// end of the final bracket: the σ returned always meets the target. Targets that need σ above
// 1e4 are reported as unreachable; targets met by σ below 1e-3 get the floor 2⁻¹⁰ ≈ 0.001.
func CalibrateNoise(eps func(float64) (float64, error), target float64) (float64, error) {
	const maxSigma, minSigma, tol = 1e4, 1e-3, 1e-4
	meets := func(sigma float64) (bool, error) {
		e, err := eps(sigma)
		if err != nil {
			return false, err
		}
		if math.IsNaN(e) {
			return false, fmt.Errorf("ε(σ = %g) is NaN", sigma)
		}
		return e <= target, nil
	}
	lo, hi := 1.0, 1.0
	good, err := meets(hi)
	if err != nil {
		return 0, err
	}
	if good { // less noise may do: halve until it does not
		for {
			if lo <= minSigma {
				return lo, nil
			}
			lo /= 2
			if good, err = meets(lo); err != nil {
				return 0, err
			}
			if !good {
				break
			}
			hi = lo
		}
	} else { // more noise is needed: double until it is enough
		for !good {
			if hi >= maxSigma {
				e, _ := eps(hi)
				return 0, fmt.Errorf("target ε = %g is unreachable: even σ = %g gives ε = %.4g; raise the target, use fewer steps or a lower sample rate", target, hi, e)
			}
			lo, hi = hi, 2*hi
			if good, err = meets(hi); err != nil {
				return 0, err
			}
		}
	}
	for hi/lo-1 > tol {
		mid := math.Sqrt(lo * hi)
		if good, err = meets(mid); err != nil {
			return 0, err
		}
		if good {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}
