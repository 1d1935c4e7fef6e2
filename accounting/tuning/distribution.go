package tuning

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// family says which law a Distribution is.
type family int

const (
	unset family = iota
	truncatedNegativeBinomial
	poisson
)

// Distribution is the law of the number K of candidates a search runs. Build one with
// TruncatedNegativeBinomial, Logarithmic, Geometric or Poisson; the zero value is no
// distribution and is refused.
type Distribution struct {
	family family
	eta    float64
	gamma  float64
	mu     float64
}

// TruncatedNegativeBinomial is the law D_{η,γ} of Papernot & Steinke (2022), Definition 1: for
// η ∈ (−1, ∞) \ {0} and γ ∈ (0, 1),
//
//	P[K = k] = (1−γ)^k / (γ^−η − 1) · Π_{ℓ=0}^{k−1} (ℓ+η)/(ℓ+1),  k = 1, 2, …,
//
// the negative binomial conditioned on K ≥ 1; η = 0 is its limit, the logarithmic distribution
// P[K = k] = (1−γ)^k / (k·log(1/γ)). η = 1 is the geometric distribution P[K = k] = γ(1−γ)^(k−1).
// The parameters are checked when the distribution is used (Validate).
func TruncatedNegativeBinomial(eta, gamma float64) Distribution {
	return Distribution{family: truncatedNegativeBinomial, eta: eta, gamma: gamma}
}

// Logarithmic is TruncatedNegativeBinomial(0, gamma).
func Logarithmic(gamma float64) Distribution { return TruncatedNegativeBinomial(0, gamma) }

// Geometric is TruncatedNegativeBinomial(1, gamma): K is the number of trials up to and
// including the first success, each a success with probability γ.
func Geometric(gamma float64) Distribution { return TruncatedNegativeBinomial(1, gamma) }

// Poisson is K ~ Poisson(μ), μ > 0 (Papernot & Steinke 2022, Section 3.3). K = 0 has probability
// e^−μ: the search then releases nothing.
func Poisson(mu float64) Distribution { return Distribution{family: poisson, mu: mu} }

// Eta returns η of a truncated negative binomial (NaN for a Poisson distribution).
func (d Distribution) Eta() float64 {
	if d.family != truncatedNegativeBinomial {
		return math.NaN()
	}
	return d.eta
}

// Gamma returns γ of a truncated negative binomial (NaN for a Poisson distribution).
func (d Distribution) Gamma() float64 {
	if d.family != truncatedNegativeBinomial {
		return math.NaN()
	}
	return d.gamma
}

// String names the distribution and its parameters.
func (d Distribution) String() string {
	switch d.family {
	case truncatedNegativeBinomial:
		switch d.eta {
		case 0:
			return fmt.Sprintf("logarithmic(γ = %g)", d.gamma)
		case 1:
			return fmt.Sprintf("geometric(γ = %g)", d.gamma)
		}
		return fmt.Sprintf("truncated negative binomial(η = %g, γ = %g)", d.eta, d.gamma)
	case poisson:
		return fmt.Sprintf("Poisson(μ = %g)", d.mu)
	}
	return "no distribution"
}

// Validate returns an error naming the parameter that is out of range, and what to do.
func (d Distribution) Validate() error {
	switch d.family {
	case truncatedNegativeBinomial:
		if !(d.eta > -1) || math.IsInf(d.eta, 1) {
			return fmt.Errorf("tuning: η = %v is outside (−1, ∞): the truncated negative binomial needs a finite η > −1; use η = 0 (logarithmic) or η = 1 (geometric)", d.eta)
		}
		if !(d.gamma > 0 && d.gamma < 1) {
			return fmt.Errorf("tuning: γ = %v is outside (0, 1): the truncated negative binomial needs 0 < γ < 1; GammaForMean gives the γ of a chosen mean number of candidates", d.gamma)
		}
	case poisson:
		if !(d.mu > 0) || math.IsInf(d.mu, 1) {
			return fmt.Errorf("tuning: μ = %v must be a positive finite number: it is the Poisson mean number of candidates", d.mu)
		}
	default:
		return errors.New("tuning: no distribution of the number of candidates: build one with TruncatedNegativeBinomial, Logarithmic, Geometric or Poisson")
	}
	return nil
}

// Mean returns E[K]. For the truncated negative binomial it is (Papernot & Steinke 2022,
// Definition 1)
//
//	E[K] = η(1−γ) / (γ(1−γ^η))   for η ≠ 0,
//	E[K] = (1/γ − 1) / log(1/γ)  for η = 0,
//
// and μ for Poisson(μ).
func (d Distribution) Mean() (float64, error) {
	if err := d.Validate(); err != nil {
		return 0, err
	}
	return math.Exp(d.logMean()), nil
}

// logMeanTerms returns terms that sum to log E[K] for a valid distribution, each to within a
// few ulps. For the truncated negative binomial they are log(1−γ), −log γ and
// −log((1−γ^η)/η), with 1 − γ^η = −expm1(η·log γ): stable for η near 0, where (1−γ^η)/η tends
// to log(1/γ) (the logarithmic case), and for γ near 0 or 1.
func (d Distribution) logMeanTerms() []float64 {
	if d.family == poisson {
		return []float64{math.Log(d.mu)}
	}
	lg := math.Log(d.gamma) // < 0
	den := -lg              // (1 − γ^η)/η, or log(1/γ) for η = 0
	if d.eta != 0 {
		den = -math.Expm1(d.eta*lg) / d.eta
	}
	return []float64{math.Log1p(-d.gamma), -lg, -math.Log(den)}
}

// logMean is log E[K] for a valid distribution, without rounding.
func (d Distribution) logMean() float64 {
	var s float64
	for _, t := range d.logMeanTerms() {
		s += t
	}
	return s
}

// GammaForMean returns the γ at which the truncated negative binomial with shape η has mean
// E[K] = mean (mean > 1; E[K] decreases from ∞ to 1 as γ goes from 0 to 1). For η = 1 it is
// 1/mean; otherwise it bisects to within a relative 1e-13. The γ returned is the one to sample
// K with and to account with: the accounting uses the mean at that γ, not the mean asked for.
func GammaForMean(eta, mean float64) (float64, error) {
	if !(eta > -1) || math.IsInf(eta, 1) {
		return 0, fmt.Errorf("tuning: η = %v is outside (−1, ∞): the truncated negative binomial needs a finite η > −1", eta)
	}
	if !(mean > 1) || math.IsInf(mean, 1) {
		return 0, fmt.Errorf("tuning: mean number of candidates %v must be a finite number above 1 (a mean of 1 is a single run, γ → 1)", mean)
	}
	if eta == 1 {
		return 1 / mean, nil
	}
	logMean := math.Log(mean)
	lo, hi := 0.0, 1.0 // E[K](lo) > mean ≥ E[K](hi), with E[K](0) = ∞ and E[K](1) = 1
	for range 200 {
		mid := (lo + hi) / 2
		if mid == lo || mid == hi || hi-lo <= 1e-13*mid {
			break
		}
		if TruncatedNegativeBinomial(eta, mid).logMean() > logMean {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2, nil
}

// maxSample bounds the number of candidates Sample returns: a draw this large means a law
// whose tail no search can run.
const maxSample = 1 << 20

// Sample draws K from the distribution with r by inversion: a uniform u, then the smallest k
// whose cumulative probability reaches u, with the probabilities from the recurrence
// P[k+1] = P[k]·(1−γ)(k+η)/(k+1) (truncated negative binomial; (1−γ)k/(k+1) for η = 0) or
// P[k+1] = P[k]·μ/(k+1) (Poisson, from P[0] = e^−μ). The theorems assume K is drawn
// independently of the data and kept secret: draw r from a cryptographically seeded source
// (crypto/rand) for a private search. Poisson means above 500 are refused (e^−μ underflows);
// so is a draw beyond 2^20 candidates.
func (d Distribution) Sample(r *rand.Rand) (int, error) {
	if err := d.Validate(); err != nil {
		return 0, err
	}
	u := r.Float64()
	var k int
	var p float64
	next := func() {}
	switch d.family {
	case poisson:
		if d.mu > 500 {
			return 0, fmt.Errorf("tuning: Poisson mean μ = %v: sampling supports μ ≤ 500 candidates", d.mu)
		}
		k, p = 0, math.Exp(-d.mu)
		next = func() { p *= d.mu / float64(k+1) }
	case truncatedNegativeBinomial:
		k = 1
		if d.eta == 0 {
			p = (1 - d.gamma) / -math.Log(d.gamma)
			next = func() { p *= (1 - d.gamma) * float64(k) / float64(k+1) }
		} else {
			// (1−γ)·η/(γ^−η − 1), with γ^−η − 1 = expm1(−η·log γ): both signs flip for η < 0.
			p = (1 - d.gamma) * d.eta / math.Expm1(-d.eta*math.Log(d.gamma))
			next = func() { p *= (1 - d.gamma) * (float64(k) + d.eta) / float64(k+1) }
		}
	}
	for cum := p; cum <= u; cum += p {
		next()
		k++
		if k > maxSample {
			return 0, fmt.Errorf("tuning: %s drew more than %d candidates: choose a smaller mean number of candidates", d, maxSample)
		}
	}
	return k, nil
}
