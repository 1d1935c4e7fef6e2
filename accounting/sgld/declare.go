package sgld

import (
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// DeclareStep returns the record of one DP-SGLD step that adds sqrt(2η)·σ·N(0, I) to the
// parameters after a gradient step on a batch of m of the n examples (m = n for full batch),
// with per-example gradients bounded by lipschitz (the clip norm, if the optimizer also clips
// as a safety net at that norm). The noise is expressed on the summed gradient, as
// accounting.Step defines it: NoiseStd = m·σ·sqrt(2/η), NoiseMultiplier = NoiseStd/L (the
// z = σ·sqrt(2/η)·m/L).
func DeclareStep(sigma, stepSize, lipschitz float64, m, n int, sampling accounting.Sampling) (accounting.Step, error) {
	if !positiveFinite(sigma) || !positiveFinite(stepSize) || !positiveFinite(lipschitz) {
		return accounting.Step{}, fmt.Errorf("sgld: σ = %v, η = %v, L = %v: all must be positive and finite", sigma, stepSize, lipschitz)
	}
	if m <= 0 || m > n {
		return accounting.Step{}, fmt.Errorf("sgld: batch size %d outside (0, n = %d]", m, n)
	}
	std := float64(m) * sigma * math.Sqrt(2/stepSize)
	return accounting.Step{
		Mechanism:       accounting.Gaussian,
		Sampling:        sampling,
		Neighbouring:    accounting.ReplaceOne,
		NoiseMultiplier: std / lipschitz,
		SampleRate:      float64(m) / float64(n),
		Sensitivity:     lipschitz,
		NoiseStd:        std,
		StepSize:        stepSize,
		BatchSize:       m,
		DatasetSize:     n,
	}, nil
}

// DecreasingStepSize is the schedule of Corollary 3.3, η_k = 1/(2β + λk/2) for k = 0, 1, ...;
// η_0 = 1/(2β) < 1/β.
func DecreasingStepSize(beta, lambda float64, k int) float64 {
	return 1 / (2*beta + lambda*float64(k)/2)
}

// SoftmaxRegression returns the public, data-independent constants of multinomial logistic
// regression with `classes` classes on features clipped to l2 norm featureBound (a per-record
// map, so DP-safe), regularised by (λ/2)‖θ‖² over all parameters (bias included when bias is
// true, which augments every feature vector by a constant 1) and projected onto the ball of
// radius sqrt(2·log(classes)/λ) around 0, which holds the minimiser because the regularised
// loss at θ = 0 is log(classes) (Ryffel, Bach & Pointcheval, Section 5.1, with constants from public bounds only):
//
//	R'² = R² + 1[bias],  L = sqrt(2)·R' + λ·radius,  β = R'²/2 + λ,  diameter = 2·radius.
//
// ‖∇ of the cross-entropy‖ = ‖p − e_y‖·‖x‖ ≤ sqrt(2)·R' and its Hessian (diag(p) − ppᵀ) ⊗ xxᵀ
// is at most R'²/2 (Böhning 1992). The returned Run releases the last iterate only with plain
// SGD on n examples.
func SoftmaxRegression(featureBound float64, classes int, lambda float64, bias bool, n int) (accounting.Run, error) {
	if !positiveFinite(featureBound) || !positiveFinite(lambda) {
		return accounting.Run{}, fmt.Errorf("sgld: feature bound %v and λ %v must be positive and finite", featureBound, lambda)
	}
	if classes < 2 {
		return accounting.Run{}, fmt.Errorf("sgld: %d classes: softmax regression needs at least 2", classes)
	}
	if n <= 0 {
		return accounting.Run{}, fmt.Errorf("sgld: dataset size %d: want n > 0", n)
	}
	r2 := featureBound * featureBound
	if bias {
		r2++
	}
	radius := math.Sqrt(2 * math.Log(float64(classes)) / lambda)
	return accounting.Run{
		LastIterateOnly: true,
		UpdateRule:      "sgd",
		DatasetSize:     n,
		Convexity:       accounting.StronglyConvex,
		Lipschitz:       math.Sqrt2*math.Sqrt(r2) + lambda*radius,
		Smoothness:      r2/2 + lambda,
		HolderExponent:  1,
		StrongConvexity: lambda,
		DomainDiameter:  2 * radius,
	}, nil
}
