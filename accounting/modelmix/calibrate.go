package modelmix

import (
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// Calibration bracket and tolerance.
const (
	// calibrateMinNoise and calibrateMaxNoise bound the noise multipliers CalibrateNoise
	// searches.
	calibrateMinNoise = 1.0 / 64
	calibrateMaxNoise = 1 << 20
	// calibrateRelTol is the relative width of the final bracket.
	calibrateRelTol = 1e-9
)

// CalibrateNoise returns the smallest noise multiplier Z = σ/c, to a relative 1e-9, such that
// steps ModelMix steps with sample rate q, mixing width W = L/c and l∞ parts p are
// (targetEps, delta)-DP under this accountant with default options. W = 0 calibrates plain
// DP-SGD (the sampled-Gaussian RDP).
//
// It brackets and bisects on Z (ε decreases as Z grows at fixed W, by post-processing: more
// Gaussian noise is a function of less), and always returns the upper end of the bracket, whose
// ε does not exceed the target.
func CalibrateNoise(targetEps, delta, q float64, steps int, w float64, p int) (float64, error) {
	return Options{}.CalibrateNoise(targetEps, delta, q, steps, w, p)
}

// CalibrateNoise is the package-level CalibrateNoise with these options (order grid and
// RDP-to-DP conversion).
func (o Options) CalibrateNoise(targetEps, delta, q float64, steps int, w float64, p int) (float64, error) {
	switch {
	case !(targetEps > 0) || math.IsInf(targetEps, 0):
		return 0, fmt.Errorf("modelmix: target ε %v is not a positive finite number", targetEps)
	case !(delta > 0 && delta < 1):
		return 0, fmt.Errorf("modelmix: δ = %v is outside (0, 1)", delta)
	case steps < 1:
		return 0, fmt.Errorf("modelmix: %d steps: calibrate for at least one step", steps)
	}
	maxOrder, err := o.maxOrder()
	if err != nil {
		return 0, err
	}
	if err := (Params{SampleRate: q, NoiseMultiplier: 1, MixWidth: w, LinfParts: p}).Validate(); err != nil {
		return 0, err
	}
	orders := Orders(maxOrder)
	convert := accounting.RDPToEpsilon
	if o.ClassicConversion {
		convert = accounting.RDPToEpsilonClassic
	}
	// within reports whether ε(z) ≤ targetEps.
	within := func(z float64) (bool, error) {
		rho, err := StepRDP(Params{SampleRate: q, NoiseMultiplier: z, MixWidth: w, LinfParts: p}, maxOrder)
		if err != nil {
			return false, err
		}
		up := 1 + 4*0x1p-52
		for i := range rho {
			rho[i] *= float64(steps) * up
		}
		eps, _, err := convert(orders, rho, delta)
		if err != nil {
			return false, err
		}
		return eps <= targetEps, nil
	}

	lo, hi := 1.0, 1.0
	ok, err := within(hi)
	if err != nil {
		return 0, err
	}
	if ok {
		for {
			lo /= 2
			if lo < calibrateMinNoise {
				return 0, fmt.Errorf("modelmix: target ε = %v is met even with noise multiplier %v: the target is too loose to calibrate (use a smaller target or fewer steps)", targetEps, calibrateMinNoise)
			}
			if ok, err = within(lo); err != nil {
				return 0, err
			} else if !ok {
				break
			}
			hi = lo
		}
	} else {
		for {
			hi *= 2
			if hi > calibrateMaxNoise {
				return 0, fmt.Errorf("modelmix: target ε = %v is not met even with noise multiplier %v: raise the target or use fewer steps", targetEps, float64(calibrateMaxNoise))
			}
			if ok, err = within(hi); err != nil {
				return 0, err
			} else if ok {
				break
			}
			lo = hi
		}
	}
	// Invariant: ε(lo) > target ≥ ε(hi).
	for hi-lo > calibrateRelTol*hi {
		mid := lo + (hi-lo)/2
		ok, err := within(mid)
		if err != nil {
			return 0, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}
