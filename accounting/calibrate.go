package accounting

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// Calibration limits: the noise multipliers CalibrateNoise searches, and its tolerance.
const (
	// CalibrateMaxNoise is the largest σ tried; a target that needs more is unreachable.
	CalibrateMaxNoise = 1e4
	// CalibrateMinNoise is the floor: a target met by every σ at or below it gets σ ≈ 1e-3.
	CalibrateMinNoise = 1e-3
	// CalibrateTolerance is the relative width of the final bracket.
	CalibrateTolerance = 1e-4
)

// CalibrateNoise returns the smallest noise multiplier σ, to a relative tolerance of 1e-4
// (CalibrateTolerance), whose ε = eps(σ) is at most target. eps must decrease in σ (every
// composition accountant's does). It brackets by doubling or halving from σ = 1, then bisects
// geometrically, and returns the upper end of the final bracket, at which eps was evaluated
// and met the target: the σ returned always meets it. A σ at which eps returns an error or a
// non-finite ε counts as not meeting the target. Targets that need σ above 1e4 are reported
// as unreachable (with the last error, if any); targets met by σ below 1e-3 get the floor
// 2⁻¹⁰ ≈ 0.001. It stops, with an error wrapping ctx.Err(), before the next evaluation of eps
// once ctx is done. It evaluates eps at most about 45 times (the bracket from σ = 1 to 1e-3 or
// 1e4, then bisection to 1e-4), so its cost is bounded by that of eps.
func CalibrateNoise(ctx context.Context, eps func(sigma float64) (float64, error), target float64) (float64, error) {
	if !(target > 0) || math.IsInf(target, 0) {
		return 0, fmt.Errorf("accounting: target ε %v must be a positive finite number", target)
	}
	var lastErr, ctxErr error
	meets := func(sigma float64) bool {
		if ctxErr != nil {
			return false
		}
		if err := ctx.Err(); err != nil {
			ctxErr = fmt.Errorf("accounting: calibration of σ stopped: %w", err)
			return false
		}
		e, err := eps(sigma)
		if err == nil && (math.IsNaN(e) || math.IsInf(e, 0)) {
			err = fmt.Errorf("ε(σ = %g) = %v", sigma, e)
		}
		if err != nil {
			lastErr = err
			return false
		}
		return e <= target
	}
	lo, hi := 1.0, 1.0
	if meets(hi) { // less noise may do: halve until it does not
		for {
			if lo <= CalibrateMinNoise {
				return lo, nil
			}
			lo /= 2
			if !meets(lo) {
				break
			}
			hi = lo
		}
	} else { // more noise is needed: double until it is enough
		for {
			if ctxErr != nil {
				return 0, ctxErr
			}
			if hi >= CalibrateMaxNoise {
				msg := fmt.Sprintf("accounting: target ε = %g is unreachable: even σ = %g does not meet it; raise the target or δ, use fewer steps or a lower sample rate", target, hi)
				if lastErr != nil {
					return 0, fmt.Errorf("%s (last error: %w)", msg, lastErr)
				}
				return 0, errors.New(msg)
			}
			lo, hi = hi, 2*hi
			if meets(hi) {
				break
			}
		}
	}
	for hi/lo-1 > CalibrateTolerance && ctxErr == nil {
		mid := math.Sqrt(lo * hi)
		if meets(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if ctxErr != nil {
		return 0, ctxErr
	}
	return hi, nil
}

// CalibrateStep returns the smallest noise multiplier (CalibrateNoise) for which the record
// step, with its NoiseMultiplier (and NoiseStd = σ·Sensitivity when Sensitivity is set)
// replaced, composed into a fresh accountant from newAccountant, meets (target, delta). It
// returns σ with the guarantee re-checked at σ, which never exceeds the target.
// It stops once ctx is done (CalibrateNoise).
func CalibrateStep(ctx context.Context, newAccountant func() (Accountant, error), step Step, target, delta float64) (float64, Guarantee, error) {
	unit := step
	unit.NoiseMultiplier = 1
	if unit.Sensitivity > 0 {
		unit.NoiseStd = unit.Sensitivity
	}
	return CalibrateRecords(ctx, newAccountant, []Step{unit}, target, delta)
}

// CalibrateRecords returns the smallest σ (CalibrateNoise) for which the records a run
// declares at σ = 1, every one with its NoiseMultiplier (and NoiseStd, where Sensitivity is
// set) multiplied by σ, composed in order into a fresh accountant from newAccountant, meet
// (target, delta). The records may differ from step to step (step sizes, blocks, batch
// indices) and a step may declare several; what must hold is that each record's noise is
// linear in the algorithm's σ, as every optim record's is. It returns σ with the guarantee
// re-checked at σ, which never exceeds the target. It stops, with an error wrapping
// ctx.Err(), once ctx is done: between evaluations of ε (CalibrateNoise) and between records.
// Each evaluation composes the records as given, so a run-length record (Count = T) costs what
// the accountant's composition of T identical steps costs (a multiplication for RDP, one FFT
// power for PLD), not T compositions.
func CalibrateRecords(ctx context.Context, newAccountant func() (Accountant, error), unit []Step, target, delta float64) (float64, Guarantee, error) {
	if !(delta > 0 && delta < 1) {
		return 0, Guarantee{}, fmt.Errorf("accounting: δ = %v is outside (0, 1)", delta)
	}
	if len(unit) == 0 {
		return 0, Guarantee{}, errors.New("accounting: no records to calibrate: the run declares no step")
	}
	scaled := func(s Step, sigma float64) Step {
		s.NoiseMultiplier *= sigma
		if s.Sensitivity > 0 {
			s.NoiseStd *= sigma
		}
		return s
	}
	at := func(sigma float64) (Guarantee, error) {
		a, err := newAccountant()
		if err != nil {
			return Guarantee{}, err
		}
		for i, s := range unit {
			if i%1024 == 0 {
				if err := ctx.Err(); err != nil {
					return Guarantee{}, fmt.Errorf("accounting: calibration of σ stopped: %w", err)
				}
			}
			if err := a.Compose(scaled(s, sigma)); err != nil {
				return Guarantee{}, err
			}
		}
		return a.Epsilon(delta)
	}
	// An accountant that refuses a record refuses it at every σ: say so now.
	if _, err := at(1); err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return 0, Guarantee{}, fmt.Errorf("accounting: calibration of σ stopped: %w", cerr)
		}
		a, aerr := newAccountant()
		if aerr != nil {
			return 0, Guarantee{}, aerr
		}
		for _, s := range unit {
			if verr := s.Validate(); verr != nil {
				return 0, Guarantee{}, verr
			}
			if cerr := a.Compose(s); cerr != nil {
				return 0, Guarantee{}, cerr
			}
		}
	}
	sigma, err := CalibrateNoise(ctx, func(s float64) (float64, error) {
		g, err := at(s)
		return g.Epsilon, err
	}, target)
	if err != nil {
		return 0, Guarantee{}, err
	}
	g, err := at(sigma)
	if err != nil {
		return 0, Guarantee{}, err
	}
	if g.Epsilon > target {
		return 0, Guarantee{}, fmt.Errorf("accounting: calibration failed: σ = %g gives ε = %g above the target %g (ε is not monotone in σ for this accountant)", sigma, g.Epsilon, target)
	}
	return sigma, g, nil
}
