package mbcd

import (
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// Requirements lists the assumptions of the bound and who vouches for each: checked ones are
// verified by the constructors (run level) or Compose (every step); the others are the user's
// (or the trainer's) declaration.
var Requirements = []struct {
	Assumption string
	Checked    bool
	Variant    string // "both", "paper" or "certified"
}{
	{"only the last iterate of the released blocks is published (Run.LastIterateOnly)", true, "both"},
	{"plain noisy (proximal) gradient steps, no momentum/Adam (Run.UpdateRule == \"sgd\")", true, "both"},
	{"each block sub-problem convex, declared convex or strongly-convex (Run.Convexity)", true, "both"},
	{"smoothness β of the block declared (Run.Smoothness, or per block in every record, Step.Smoothness with Run.SmoothnessPerRecord), needed for L_F", true, "both"},
	{"Gaussian noise, replace-one neighbours, fixed batch size and sampling scheme, per-example clip norm C > 0 declared (Step)", true, "both"},
	{"shuffle-once: batch index within the ⌊n/b⌋ batches; reshuffling: whole cyclic epochs (Step.BatchIndex)", true, "both"},
	{"a single released block (Step.Block constant)", true, "certified"},
	{"L_F = max(|1−ηλ|, |1−ηβ|) from the declared λ, β (not the paper's |1−ηβ|), contraction exponent 1", true, "certified"},
	{"the block loss really is convex (λ-strongly convex if λ > 0) and β-smooth on every batch, and clipping never activates", false, "both"},
	{"the prox is L_T-Lipschitz (Run.ProxLipschitz or Options.ProxLipschitz, default 1)", false, "both"},
	{"the initialisation is data-independent (1/c_0 = Run.InitialLSIInverse or Options.InitialLSIInverse)", false, "both"},
	{"a step's update map depends only on the current released block and its batch (hidden auxiliaries recomputed from it, not carried across steps)", false, "certified"},
	{"the shuffle-once partition is uniformly random and kept secret", false, "both"},
}

func checkRun(run accounting.Run, opts Options) error {
	if !run.LastIterateOnly {
		return &accounting.RequirementError{Accountant: "mbcd", Theorem: "Lemma C.3", Reason: "the bound covers releasing the last iterate only",
			Fix: "set %s or use a composition accountant", Fields: []string{"Run.LastIterateOnly"}}
	}
	if run.UpdateRule != "sgd" {
		return fmt.Errorf("mbcd: update rule %q is not covered: the analysis needs plain noisy proximal gradient steps (\"sgd\")", run.UpdateRule)
	}
	if run.DatasetSize <= 0 {
		return fmt.Errorf("mbcd: dataset size %d: declare n > 0", run.DatasetSize)
	}
	switch run.Convexity {
	case accounting.Convex:
	case accounting.StronglyConvex:
		if !(run.StrongConvexity > 0) {
			return fmt.Errorf("mbcd: strongly convex blocks with λ = %v: declare λ > 0", run.StrongConvexity)
		}
	default:
		return fmt.Errorf("mbcd: convexity %q: the bound needs every released block's sub-problem convex, so that a gradient step contracts (L_F ≤ 1, Lemma 4.1); a non-convex loss such as DP-SGD on all of a network's weights is not covered: use a block multi-convex model (dp-mbcd, declared convex) or a composition accountant with poisson or without-replacement sampling", run.Convexity)
	}
	if h := run.HolderExponent; h != 0 && h != 1 {
		return fmt.Errorf("mbcd: Hölder exponent %v: the contraction constant needs smooth blocks (exponent 1)", h)
	}
	beta, lam := run.Smoothness, run.StrongConvexity
	if math.IsNaN(lam) || lam < 0 || math.IsInf(lam, 1) {
		return fmt.Errorf("mbcd: strong convexity %v: want λ ≥ 0", lam)
	}
	if !(opts.ProxLipschitz > 0) || math.IsInf(opts.ProxLipschitz, 1) {
		return fmt.Errorf("mbcd: prox Lipschitz constant L_T = %v: want a positive finite number (1 for any convex prox)", opts.ProxLipschitz)
	}
	if math.IsNaN(opts.InitialLSIInverse) || opts.InitialLSIInverse < 0 || math.IsInf(opts.InitialLSIInverse, 1) {
		return fmt.Errorf("mbcd: initial 1/c_0 = %v: want ≥ 0", opts.InitialLSIInverse)
	}
	switch opts.Variant {
	case Certified:
		if opts.GradientLipschitz != 0 {
			return errors.New("mbcd: the certified variant derives L_F from the declared λ and β; a user-supplied L_F is the paper variant")
		}
	case Paper:
		if opts.GradientLipschitz > 0 {
			if math.IsInf(opts.GradientLipschitz, 1) {
				return errors.New("mbcd: L_F is infinite")
			}
			return nil
		}
	default:
		return fmt.Errorf("mbcd: unknown variant %d", opts.Variant)
	}
	if run.SmoothnessPerRecord {
		if beta != 0 {
			return fmt.Errorf("mbcd: the run declares smoothness per record and also one β = %v: declare one (per-block constants are never folded into one, which could shrink L_F)", beta)
		}
		return nil // every record's β is checked by Compose
	}
	if !(beta > 0) || math.IsInf(beta, 1) {
		return fmt.Errorf("mbcd: smoothness β = %v: declare the block's smoothness (e.g. γρ² for a lifted layer, Lemma B.1)", beta)
	}
	if beta < lam {
		return fmt.Errorf("mbcd: smoothness β = %v < strong convexity λ = %v: check the declared constants", beta, lam)
	}
	return nil
}
