package core

import "math"

// Weight standardisation of conv layers (Qiao et al., "Micro-Batch Training with Batch-Channel
// Normalization and Weight Standardization"; used with GroupNorm for private training by
// De, Berrada, Hayes, Smith & Balle (2022), "Unlocking High-Accuracy Differentially Private
// Image Classification through Scale"). A standardised conv layer computes its output
// with
//
//	Ŵ_o = (W_o − mean(W_o)) / √(var(W_o) + ε)
//
// in place of each output channel o's weights W_o (a column of the d×k weight matrix, over its
// fan-in d = C·kh·kw; var is the biased variance, ε = WeightStdEpsilon). It is a
// reparametrisation: Ŵ is a function of the parameters alone, never of the batch, so every
// example's loss still depends on its own input only, and its gradient with respect to the
// parameters W is the gradient with respect to Ŵ mapped back through the standardisation's
// Jacobian, which is the same linear map for every example:
//
//	∂ℓ/∂W_o = (1/σ_o) (v_o − mean(v_o) − Ŵ_o·mean(v_o ⊙ Ŵ_o)),  v_o = ∂ℓ/∂Ŵ_o,
//
// the derivative of any normalisation x̂ = (x − μ)/σ (as GroupNorm's backward pass). Per-example
// clipping must clip this mapped-back gradient (the one the privacy analysis bounds), not v:
// the map is a contraction times 1/σ_o, so ‖v‖ is neither its norm nor a bound on it. Both
// engines therefore materialise each example's v_i = P_iᵀG_i for a standardised layer, map it
// back, and take the norm of and sum the mapped-back gradient itself: the clipped sum holds
// exactly c_i times the vector whose norm gave c_i.

// WeightStdEpsilon is ε in the standardisation's denominator.
const WeightStdEpsilon = 1e-5

// Standardise writes the standardised weights of the d×k row-major matrix w (one column per
// output channel) into hat and 1/σ_o into inv (len k); mean is scratch of length k. The
// statistics are computed in float64, in two passes (mean, then squared deviations).
func Standardise(w, hat []float32, inv, mean []float64, d, k int) {
	mean, inv = mean[:k], inv[:k]
	clear(mean)
	clear(inv)
	for r := 0; r < d; r++ {
		for o, v := range w[r*k : (r+1)*k] {
			mean[o] += float64(v)
		}
	}
	for o := range mean {
		mean[o] /= float64(d)
	}
	for r := 0; r < d; r++ {
		for o, v := range w[r*k : (r+1)*k] {
			e := float64(v) - mean[o]
			inv[o] += e * e
		}
	}
	for o, ss := range inv {
		inv[o] = 1 / math.Sqrt(ss/float64(d)+WeightStdEpsilon)
	}
	for r := 0; r < d; r++ {
		for o, v := range w[r*k : (r+1)*k] {
			hat[r*k+o] = float32((float64(v) - mean[o]) * inv[o])
		}
	}
}

// StandardiseBack maps v (d×k row-major, a gradient with respect to the standardised weights
// hat) in place to the gradient with respect to the raw weights: per column o,
// (1/σ_o)(v_o − mean(v_o) − Ŵ_o·mean(v_o ⊙ Ŵ_o)). inv holds 1/σ_o; acc is float64 scratch of
// length at least 2k, returned (grown if needed).
func StandardiseBack(v, hat []float32, inv []float64, d, k int, acc []float64) []float64 {
	if cap(acc) < 2*k {
		acc = make([]float64, 2*k)
	}
	acc = acc[:2*k]
	mv, mvh := acc[:k], acc[k:]
	clear(acc)
	for r := 0; r < d; r++ {
		h := hat[r*k : (r+1)*k]
		for o, x := range v[r*k : (r+1)*k] {
			mv[o] += float64(x)
			mvh[o] += float64(x) * float64(h[o])
		}
	}
	for o := range mv {
		mv[o] /= float64(d)
		mvh[o] /= float64(d)
	}
	for r := 0; r < d; r++ {
		h := hat[r*k : (r+1)*k]
		row := v[r*k : (r+1)*k]
		for o, x := range row {
			row[o] = float32(inv[o] * (float64(x) - mv[o] - float64(h[o])*mvh[o]))
		}
	}
	return acc
}
