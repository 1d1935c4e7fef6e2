package dpsgld

import (
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// Constants are the public, data-independent constants of DP-SGLD's loss and domain
// (Ryffel, Bach & Pointcheval, Section 5.1, with constants from public bounds): the per-example loss ℓ(θ, x) = data term + (λ/2)‖θ‖², regulariser over every
// parameter including the bias, is λ-strongly convex, β-smooth and L-Lipschitz on the ball
// ‖θ‖₂ ≤ R that the iterates are projected onto.
type Constants struct {
	// Lipschitz is L ≥ ‖∇ℓ(θ, x)‖₂ on the ball, regulariser included (the conservative
	// choice for a loss that includes the regulariser: L = L_data + λR).
	Lipschitz float64
	// DataLipschitz bounds the data term's per-example gradient norm; DP-SGLD clips
	// per-sample gradients there as a safety net, so the sensitivity holds whatever the
	// model does. When the bounds hold it changes gradients only by float32 rounding; a
	// larger activation means the constants do not describe the model.
	DataLipschitz float64
	// Smoothness is β; the step sizes must satisfy η_k < 1/β (Lemma 3.3).
	Smoothness float64
	// StrongConvexity is λ, the L2 regularisation coefficient.
	StrongConvexity float64
	// Radius is R, the radius of the l2 ball the iterates are projected onto.
	Radius float64
	// FeatureNorm is the public bound R_x on the examples' feature norms the constants were
	// derived from; DP-SGLD rescales every example to ‖x‖₂ ≤ R_x (a per-record map). 0: the
	// constants were supplied by the user and no feature map is applied.
	FeatureNorm float64
}

// SoftmaxConstants derives the constants of L2-regularised multinomial logistic
// regression with the given number of classes from a public bound featureNorm on ‖x‖₂
// (public bounds replacing the data-dependent β of Ryffel, Bach & Pointcheval's Section 5.1,
// with R_x'² = R_x² + 1 when the model has a bias):
//
//	L_data = √2·R_x'                       (‖p − e_y‖₂ ≤ √2, ∇ = (p − e_y) ⊗ x')
//	β      = R_x'²/2 + λ                   (per-example Hessian ⪯ (1/2)‖x'‖²I + λI)
//	R      = min(√(2 log C / λ), L_data/λ)  (both bound ‖θ*‖; L_D(0) = log C)
//	L      = L_data + λR
func SoftmaxConstants(featureNorm float64, classes int, lambda float64, bias bool) (Constants, error) {
	if !(featureNorm > 0) || math.IsInf(featureNorm, 0) {
		return Constants{}, fmt.Errorf("dpsgld: feature norm bound %v must be positive and finite", featureNorm)
	}
	if classes < 2 {
		return Constants{}, fmt.Errorf("dpsgld: softmax regression needs at least 2 classes, got %d", classes)
	}
	if !(lambda > 0) || math.IsInf(lambda, 0) {
		return Constants{}, fmt.Errorf("dpsgld: DP-SGLD needs L2 regularisation λ > 0 for strong convexity, got %v", lambda)
	}
	r2 := featureNorm * featureNorm
	if bias {
		r2++
	}
	ldata := math.Sqrt2 * math.Sqrt(r2)
	radius := math.Min(math.Sqrt(2*math.Log(float64(classes))/lambda), ldata/lambda)
	return Constants{
		Lipschitz:       ldata + lambda*radius,
		DataLipschitz:   ldata,
		Smoothness:      r2/2 + lambda,
		StrongConvexity: lambda,
		Radius:          radius,
		FeatureNorm:     featureNorm,
	}, nil
}

// Validate reports whether the constants are usable.
func (c Constants) Validate() error {
	for _, v := range []struct {
		name string
		x    float64
	}{{"Lipschitz constant L", c.Lipschitz}, {"data Lipschitz constant", c.DataLipschitz}, {"smoothness β", c.Smoothness}, {"strong convexity λ", c.StrongConvexity}, {"radius R", c.Radius}} {
		if !(v.x > 0) || math.IsInf(v.x, 0) {
			return fmt.Errorf("dpsgld: DP-SGLD %s = %v must be positive and finite", v.name, v.x)
		}
	}
	if c.DataLipschitz > c.Lipschitz {
		return fmt.Errorf("dpsgld: DP-SGLD data Lipschitz constant %v exceeds L = %v", c.DataLipschitz, c.Lipschitz)
	}
	if c.StrongConvexity > c.Smoothness {
		return fmt.Errorf("dpsgld: DP-SGLD strong convexity λ = %v exceeds smoothness β = %v: no loss has both", c.StrongConvexity, c.Smoothness)
	}
	if !(c.FeatureNorm >= 0) || math.IsInf(c.FeatureNorm, 0) {
		return fmt.Errorf("dpsgld: DP-SGLD feature norm bound %v must be finite and non-negative", c.FeatureNorm)
	}
	return nil
}

// Run returns the run-level declaration for accounting of a DP-SGLD run on n examples: last
// iterate only, plain SGD, a strongly convex smooth loss with these constants, and a domain of
// diameter 2R.
func (c Constants) Run(n int) accounting.Run {
	return accounting.Run{
		LastIterateOnly: true,
		UpdateRule:      "sgd",
		DatasetSize:     n,
		Convexity:       accounting.StronglyConvex,
		Lipschitz:       c.Lipschitz,
		Smoothness:      c.Smoothness,
		HolderExponent:  1,
		StrongConvexity: c.StrongConvexity,
		DomainDiameter:  2 * c.Radius,
	}
}
