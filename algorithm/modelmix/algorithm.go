package modelmix

import (
	"fmt"
	"slices"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/algorithm"
	"github.com/dptrain/dptrain/optim"
)

// Name is ModelMix's optimizer.algorithm name.
const Name = "modelmix"

// Section is optimizer.modelmix: ModelMix's mixing parameters (Xiao, Wan & Devadas, "Differentially Private Deep Learning with ModelMix").
type Section struct {
	// Gap is κ: the gap enforced between the last two iterates is τ = κ·η.
	Gap float64 `yaml:"gap"`
	// LinfParts is p of the l2+l∞ clipping (Algorithm 2); 0 or 1 means l2 only.
	LinfParts int `yaml:"linf_parts"`
	// Momentum is μ ∈ [0, 1) of heavy-ball momentum on the privatised gradient (Config.Momentum);
	// 0, the default, is Algorithm 1. An explicit opt-in outside ModelMix's guarantee: with
	// μ > 0 the modelmix accountant reports a refusal instead of ε, and a certified accountant
	// (rdp, pld) must stop and calibrate the run.
	Momentum float64 `yaml:"momentum"`
}

// Algorithm is DP-SGD with ModelMix (Xiao, Wan & Devadas, Algorithm 1).
func Algorithm() algorithm.Algorithm {
	return algorithm.Algorithm{
		Name: Name, Private: true, ClipNorm: true, DataParallel: true,
		// Xiao, Wan & Devadas's Theorem 4.1 assumes Poisson sampling.
		Sampling: []string{"poisson"}, SamplingReason: "ModelMix's guarantee assumes it",
		Accountants: []string{"modelmix", "rdp"},
		Section:     "modelmix", NewSection: func() any { return &Section{} },
		Validate: func(c algorithm.Config, section any) []error {
			s := section.(*Section)
			var errs []error
			if c.Optimizer.Update != "sgd" {
				// Theorem 4.1 covers plain SGD only (its proof, Appendix C).
				errs = append(errs, fmt.Errorf("modelmix: optimizer.update must be sgd: momentum or Adam state breaks ModelMix's guarantee (heavy-ball momentum outside the guarantee, reported under a certified accountant only, is optimizer.modelmix.momentum)"))
			}
			switch {
			case !(s.Momentum >= 0 && s.Momentum < 1):
				errs = append(errs, fmt.Errorf("optimizer.modelmix.momentum = %v: must be in [0, 1) (0, the default, is ModelMix's plain step)", s.Momentum))
			case s.Momentum > 0 && c.StopAccountant == Name:
				// Theorem 4.1's proof (Appendix C) conditions each step on the public iterates; the velocity carries hidden noisy gradients.
				errs = append(errs, fmt.Errorf("optimizer.modelmix.momentum = %v: the velocity carries earlier noisy gradients into every step, which ModelMix's bound (Theorem 4.1) does not cover, so the modelmix accountant refuses to give ε for this run and cannot stop or calibrate it: set privacy.stop_accountant: rdp (certified; it covers momentum), or set the momentum to 0", s.Momentum))
			case s.Momentum > 0 && !slices.Contains(c.Accountants, "rdp") && !slices.Contains(c.Accountants, "pld"):
				errs = append(errs, fmt.Errorf("optimizer.modelmix.momentum = %v: ModelMix's bound (Theorem 4.1) does not cover momentum, so the run needs a certified accountant that does: add rdp (or pld) to privacy.accountants", s.Momentum))
			}
			if err := algorithm.Positive("optimizer.modelmix.gap", s.Gap); err != nil {
				errs = append(errs, err)
			}
			if s.LinfParts < 0 {
				errs = append(errs, fmt.Errorf("optimizer.modelmix.linf_parts = %d: must not be negative", s.LinfParts))
			}
			return errs
		},
		Prepare: func(e algorithm.Env) (algorithm.Plan, error) {
			s, o := e.Section.(*Section), e.Config.Optimizer
			return algorithm.Plan{
				Run: algorithm.ClipNormRun(e),
				NewOptimizer: func(sigma float64, noise *optim.Noise) (optim.Optimizer, error) {
					rule, err := optim.NewSGD(o.WeightDecay)
					if err != nil {
						return nil, err
					}
					return New(Config{NoiseMultiplier: sigma, ClipNorm: o.ClipNorm,
						LinfParts: s.LinfParts, Schedule: e.Schedule, MixRatio: s.Gap, Rule: rule, Momentum: s.Momentum}, noise)
				},
			}, nil
		},
		Compare: func(_ algorithm.Config, section any, run accounting.Run, step accounting.Step) (accounting.Run, accounting.Step, error) {
			step.LinfParts = section.(*Section).LinfParts
			return run, step, nil
		},
	}
}
