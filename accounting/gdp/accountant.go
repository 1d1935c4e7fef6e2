package gdp

import (
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// Name is the accountant's mode name.
const Name = "gdp"

// Accountant composes Gaussian steps in Gaussian DP.
type Accountant struct {
	mu2        float64 // Σ of squared per-step μ contributions
	steps      int
	subsampled bool
}

// New returns an accountant; the run needs no declared constants.
func New(accounting.Run) (*Accountant, error) { return &Accountant{}, nil }

// Name implements accounting.Accountant.
func (a *Accountant) Name() string { return Name }

// Label implements accounting.Accountant.
func (a *Accountant) Label() accounting.Label {
	if a.subsampled {
		return accounting.Approximate
	}
	return accounting.Certified
}

// Mu returns the composed μ.
func (a *Accountant) Mu() float64 { return math.Sqrt(a.mu2) }

// Compose implements accounting.Accountant.
func (a *Accountant) Compose(s accounting.Step) error {
	if err := s.Validate(); err != nil {
		return err
	}
	if s.Mechanism != accounting.Gaussian {
		return fmt.Errorf("gdp: mechanism %q is not the Gaussian mechanism", s.Mechanism)
	}
	sigma, T := s.NoiseMultiplier, float64(s.Steps())
	// The new μ² and label are committed only once the step is accepted: a refused step
	// leaves the accountant unchanged.
	mu2, subsampled := a.mu2, a.subsampled
	switch s.Sampling {
	case accounting.FullBatch:
		if s.Neighbouring == accounting.ReplaceOne {
			sigma /= 2
		}
		mu2 += T / (sigma * sigma)
	case accounting.Poisson:
		if s.Neighbouring == accounting.ReplaceOne {
			return errors.New("gdp: Poisson sampling is analysed for add/remove neighbours")
		}
		q := s.SampleRate
		mu2 += T * q * q * math.Expm1(1/(sigma*sigma))
		subsampled = subsampled || q < 1
	default:
		return fmt.Errorf("gdp: %s sampling is not covered by the CLT of Dong, Roth & Su (Poisson sampling)", s.Sampling)
	}
	if math.IsInf(mu2, 0) || math.IsNaN(mu2) {
		return fmt.Errorf("gdp: μ overflowed (σ = %v is too small for this accountant)", s.NoiseMultiplier)
	}
	a.mu2, a.subsampled = mu2, subsampled
	a.steps += s.Steps()
	return nil
}

// Delta is δ(ε) of μ-GDP (Dong, Roth & Su, Corollary 2.13),
//
//	δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2),
//
// evaluated in log space (see logDelta) so that it stays exact where e^ε overflows (ε > 709).
func Delta(mu, eps float64) float64 {
	if mu == 0 {
		return 0
	}
	return math.Exp(logDelta(mu, eps))
}

// logDelta is log δ(ε) = log Φ(a) + log(1 − exp(ε + log Φ(b) − log Φ(a))) with a = −ε/μ + μ/2,
// b = −ε/μ − μ/2; −Inf where δ(ε) = 0.
func logDelta(mu, eps float64) float64 {
	la, lb := logNormCDF(-eps/mu+mu/2), logNormCDF(-eps/mu-mu/2)
	r := eps + lb - la
	if r >= 0 {
		return math.Inf(-1)
	}
	return la + math.Log(-math.Expm1(r))
}

// logNormCDF is log Φ(x): directly for x > −30, else by the asymptotic series of Mills' ratio,
// Φ(x) = φ(x)/(−x)·(1 − 1/x² + 3/x⁴ − 15/x⁶ + 105/x⁸ − …), whose truncation error at x = −30 is
// below 10⁻¹² relative.
func logNormCDF(x float64) float64 {
	if x > -30 {
		return math.Log(normCDF(x))
	}
	x2 := 1 / (x * x)
	series := 1 - x2*(1-x2*(3-x2*(15-x2*105)))
	return -x*x/2 - 0.5*math.Log(2*math.Pi) - math.Log(-x) + math.Log(series)
}

// EpsilonOf is the smallest ε ≥ 0 with Delta(mu, ε) ≤ delta, found by bisection to a relative
// tolerance of 1e-12 and rounded up.
func EpsilonOf(mu, delta float64) (float64, error) {
	if !(delta > 0 && delta < 1) {
		return 0, fmt.Errorf("gdp: δ = %v is outside (0, 1)", delta)
	}
	if mu == 0 || Delta(mu, 0) <= delta {
		return 0, nil
	}
	ld := math.Log(delta)
	lo, hi := 0.0, 1.0
	for logDelta(mu, hi) > ld {
		lo, hi = hi, 2*hi
		if hi > 1e6 {
			return math.Inf(1), fmt.Errorf("gdp: no ε below 10⁶ for μ = %v at δ = %v; raise the noise multiplier", mu, delta)
		}
	}
	for hi-lo > 1e-12*hi {
		mid := (lo + hi) / 2
		if logDelta(mu, mid) > ld {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}

// Epsilon implements accounting.Accountant.
func (a *Accountant) Epsilon(delta float64) (accounting.Guarantee, error) {
	eps, err := EpsilonOf(a.Mu(), delta)
	return accounting.Guarantee{Accountant: Name, Label: a.Label(), Epsilon: eps, Delta: delta}, err
}

// Clone implements accounting.Accountant.
func (a *Accountant) Clone() accounting.Accountant { c := *a; return &c }

// normCDF is Φ, accurate in the far lower tail through erfc.
func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
