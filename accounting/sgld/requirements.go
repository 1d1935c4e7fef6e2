package sgld

import (
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// Requirements lists the assumptions of Theorem 3.1 and who vouches for each. Those marked
// checked are verified by New/NewConservative (run level) or Compose (every step); the others
// cannot be observed by an accountant and are the user's (or the trainer's) declaration.
var Requirements = []struct {
	Assumption string
	Checked    bool
}{
	{"only the last iterate is released (Run.LastIterateOnly)", true},
	{"plain SGD update, no momentum/Adam state (Run.UpdateRule == \"sgd\")", true},
	{"loss declared λ-strongly convex with λ > 0 (Run.Convexity, Run.StrongConvexity)", true},
	{"loss declared β-smooth with β ≥ λ, Hölder exponent 1 (Run.Smoothness)", true},
	{"loss declared L-Lipschitz on 𝒞 with L > 0 (Run.Lipschitz)", true},
	{"iterates projected onto a bounded convex set of diameter D, and 2L ≥ λD as strong convexity forces (Run.DomainDiameter)", true},
	{"0 < η_k < 1/β at every step (Step.StepSize)", true},
	{"Gaussian mechanism, replace-one neighbouring, constant Langevin σ, same n (Step)", true},
	{"every step updates the whole model, not one coordinate block (Step.Block == 0)", true},
	{"clipping, if any, at a norm ≥ L so that it never changes a gradient (Step.Sensitivity)", true},
	{"sampling covered by the variant: fixed-size subsets each step or full batch (paper); also epoch shuffling with declared batch indices (conservative)", true},
	{"the loss really is λ-strongly convex, β-smooth and L-Lipschitz per example on 𝒞 (e.g. SoftmaxRegression on features clipped to norm R)", false},
	{"θ_0 ~ Π_𝒞(N(0, (2σ²/λ)·I)) (Lemma 3.3)", false},
	{"the step sizes, σ, λ, β, L and 𝒞 are chosen without looking at the private data", false},
}

// relTol is the relative tolerance for "the same σ" across steps and for the consistency of
// NoiseStd with NoiseMultiplier·Sensitivity.
const relTol = 1e-9

// checkRun verifies the run-level assumptions of Theorem 3.1.
func checkRun(run accounting.Run) error {
	if !run.LastIterateOnly {
		return &accounting.RequirementError{Accountant: "sgld", Theorem: "Theorem 3.1", Reason: "the bound covers releasing the last iterate only",
			Fix: "set %s or use a composition accountant", Fields: []string{"Run.LastIterateOnly"}}
	}
	if run.UpdateRule != "sgd" {
		return fmt.Errorf("sgld: update rule %q is not covered: the theorem needs plain noisy SGD (\"sgd\"); momentum or Adam carry noisy gradients across steps", run.UpdateRule)
	}
	if run.DatasetSize <= 0 {
		return fmt.Errorf("sgld: dataset size %d: declare n > 0", run.DatasetSize)
	}
	if run.Convexity != accounting.StronglyConvex {
		return fmt.Errorf("sgld: convexity %q: Theorem 3.1 needs a strongly convex loss (declare strongly-convex with its constant λ)", run.Convexity)
	}
	lam, beta, lip, diam := run.StrongConvexity, run.Smoothness, run.Lipschitz, run.DomainDiameter
	if !positiveFinite(lam) {
		return fmt.Errorf("sgld: strong convexity λ = %v: declare λ > 0", lam)
	}
	if !positiveFinite(beta) {
		return fmt.Errorf("sgld: smoothness β = %v: declare β > 0", beta)
	}
	if beta < lam {
		return fmt.Errorf("sgld: smoothness β = %v < strong convexity λ = %v: no loss is both; check the declared constants", beta, lam)
	}
	if h := run.HolderExponent; h != 0 && h != 1 {
		return fmt.Errorf("sgld: Hölder exponent %v: Theorem 3.1 needs a smooth loss (exponent 1)", h)
	}
	if !positiveFinite(lip) {
		return fmt.Errorf("sgld: Lipschitz constant L = %v: declare L > 0 (the gradient-norm bound on 𝒞)", lip)
	}
	if !positiveFinite(diam) {
		return fmt.Errorf("sgld: domain diameter %v: a λ-strongly convex loss is L-Lipschitz only on a bounded set; project onto a ball and declare its diameter", diam)
	}
	// On a set of diameter D, strong convexity gives ‖∇ℓ(x) − ∇ℓ(y)‖ ≥ λ‖x − y‖, so a gradient
	// bound L needs 2L ≥ λD.
	if 2*lip < lam*diam {
		return fmt.Errorf("sgld: L = %v, λ = %v and diameter %v are inconsistent: a λ-strongly convex loss has gradients of norm ≥ λD/2 = %v somewhere on the domain", lip, lam, diam, lam*diam/2)
	}
	return nil
}

func positiveFinite(x float64) bool { return x > 0 && !math.IsInf(x, 1) }
