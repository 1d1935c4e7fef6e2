package modelmix

import (
	"fmt"
	"math"
)

// DefaultMaxOrder is the largest Rényi order of the default grid {2, 3, …, 256}: at least 256,
// and up to 1024 for ε below about 0.5 (the paper uses integer orders α > 1 without a range).
const DefaultMaxOrder = 256

// maxOrderLimit bounds the order grid; beyond it the binomial sums and integrals grow
// quadratically for no benefit at any ε of practical interest.
const maxOrderLimit = 4096

// Params is one ModelMix step in units of the l2 clip norm c: the bound of Theorem 4.1 and
// Corollary 4.1 depends on σ, L and c only through NoiseMultiplier = σ/c and MixWidth = L/c
// (the bound is invariant to scaling σ, L and c together).
type Params struct {
	// SampleRate is the Poisson sampling rate q ∈ (0, 1].
	SampleRate float64
	// NoiseMultiplier is Z = σ/c, the noise standard deviation on the sum of clipped gradients
	// divided by the clip norm.
	NoiseMultiplier float64
	// MixWidth is W = L/c, the side of the mixing box in gradient-sum units (L = τ/η_eff for
	// the update w − η_eff·(G + Δ) of Algorithm 1) divided by the clip norm. 0 means no mixing: plain DP-SGD.
	MixWidth float64
	// LinfParts is p of the l2+l∞ clipping of Algorithm 2 (every coordinate truncated to
	// c/√p after l2 clipping); 0 and 1 both mean l2 clipping only.
	LinfParts int
}

// canonical returns the parameters with LinfParts 0 read as 1, and LinfParts set to 1 when
// there is no mixing (the Gaussian bound does not depend on p: p·k(k−1)(c²/p) = k(k−1)c²).
func (p Params) canonical() Params {
	if p.LinfParts == 0 || p.MixWidth == 0 {
		p.LinfParts = 1
	}
	return p
}

// Validate reports whether the parameters are in the domain of Theorem 4.1.
func (p Params) Validate() error {
	switch {
	case !(p.SampleRate > 0 && p.SampleRate <= 1):
		return fmt.Errorf("modelmix: sample rate %v is outside (0, 1]", p.SampleRate)
	case !(p.NoiseMultiplier > 0) || math.IsInf(p.NoiseMultiplier, 0):
		return fmt.Errorf("modelmix: noise multiplier %v is not a positive finite number", p.NoiseMultiplier)
	case !(p.MixWidth >= 0) || math.IsInf(p.MixWidth, 0):
		return fmt.Errorf("modelmix: mixing width %v is not a finite number ≥ 0 (in units of the clip norm)", p.MixWidth)
	case p.LinfParts < 0:
		return fmt.Errorf("modelmix: l∞ parts p = %d is negative: use 0 or 1 for l2 clipping only", p.LinfParts)
	}
	return nil
}

// Orders returns the integer Rényi orders {2, 3, …, maxOrder} at which StepRDP is evaluated.
func Orders(maxOrder int) []float64 {
	if maxOrder < 2 {
		return nil
	}
	o := make([]float64, maxOrder-1)
	for i := range o {
		o[i] = float64(i + 2)
	}
	return o
}

// StepRDP returns the Rényi DP of one ModelMix step at the integer orders α = 2, …, maxOrder
// (element i is order i+2), add/remove neighbours:
//
//	ρ(α) = (1/(α−1))·ln Σ_{k=0}^{α} C(α,k)·(1−q)^{α−k}·q^k·a_k^p,
//
// Xiao, Wan & Devadas's Corollary 4.1 with the factor T restored and the sign fixed, which for p = 1 is
// Theorem 4.1's D_α((1−q)·P0 + q·P1 ‖ P0). a_k are the likelihood-ratio moments of LogMoments
// with σ = Z, L = W and shift s = 1/√p in clip units. For W = 0 it is exactly the
// Poisson-subsampled Gaussian RDP at integer orders (Mironov, Talwar & Zhang 2019, Theorem 5).
//
// Only integer orders are computed: fractional orders need the binomial expansion, which
// Theorem 4.1's reduction to a one-hot worst case relies on (Appendix C; Corollary 4.1's Hamming-weight-p worst case).
//
// The sum is evaluated as ln Σ = log1p(Σ_{k≥2} C(α,k)(1−q)^{α−k}q^k·(a_k^p − 1)), using
// Σ_k C(α,k)(1−q)^{α−k}q^k = 1: every term is non-negative, so a per-step ρ of 1e-9 keeps
// full relative precision.
func StepRDP(p Params, maxOrder int) ([]float64, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if maxOrder < 2 || maxOrder > maxOrderLimit {
		return nil, fmt.Errorf("modelmix: maximum Rényi order %d is outside [2, %d]", maxOrder, maxOrderLimit)
	}
	p = p.canonical()
	parts := float64(p.LinfParts)
	logA, err := LogMoments(maxOrder, p.NoiseMultiplier, p.MixWidth, 1/math.Sqrt(parts))
	if err != nil {
		return nil, err
	}
	// ln(a_k^p − 1), the excess of each moment over the Gaussian-free value 1.
	logExcess := make([]float64, len(logA))
	for k, la := range logA {
		logExcess[k] = logExpm1(parts * la)
	}

	q := p.SampleRate
	logQ, log1mQ := math.Log(q), math.Log1p(-q)
	// lnFact[n] = ln n!
	lnFact := make([]float64, maxOrder+1)
	for n := range lnFact {
		lnFact[n], _ = math.Lgamma(float64(n + 1))
	}
	rho := make([]float64, maxOrder-1)
	terms := make([]float64, 0, maxOrder+1)
	for alpha := 2; alpha <= maxOrder; alpha++ {
		terms = terms[:0]
		for k := 2; k <= alpha; k++ {
			if math.IsInf(logExcess[k], -1) {
				continue
			}
			t := lnFact[alpha] - lnFact[k] - lnFact[alpha-k] + float64(k)*logQ + logExcess[k]
			if alpha > k {
				t += float64(alpha-k) * log1mQ
			}
			terms = append(terms, t)
		}
		r := log1pExp(logSumExp(terms)) / float64(alpha-1)
		// Round up by the relative error of the ~α-term sum and the lgamma values.
		rho[alpha-2] = r * (1 + float64(4*alpha+16)*0x1p-52)
	}
	return rho, nil
}

// logExpm1 returns ln(e^x − 1) for x ≥ 0 (−Inf at 0).
func logExpm1(x float64) float64 {
	if x > 40 {
		return x + math.Log1p(-math.Exp(-x))
	}
	return math.Log(math.Expm1(x))
}

// log1pExp returns ln(1 + e^x).
func log1pExp(x float64) float64 {
	if x > 0 {
		return x + math.Log1p(math.Exp(-x))
	}
	return math.Log1p(math.Exp(x))
}

// logSumExp returns ln Σ e^{x_i}, −Inf for no terms.
func logSumExp(x []float64) float64 {
	top := math.Inf(-1)
	for _, v := range x {
		top = math.Max(top, v)
	}
	if math.IsInf(top, 0) {
		return top
	}
	var s float64
	for _, v := range x {
		s += math.Exp(v - top)
	}
	return top + math.Log(s)
}
