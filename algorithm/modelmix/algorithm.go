package modelmix

import (
	"fmt"

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
				errs = append(errs, fmt.Errorf("modelmix: optimizer.update must be sgd: momentum or Adam state breaks ModelMix's guarantee"))
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
						LinfParts: s.LinfParts, Schedule: e.Schedule, MixRatio: s.Gap, Rule: rule}, noise)
				},
			}, nil
		},
		Compare: func(_ algorithm.Config, section any, run accounting.Run, step accounting.Step) (accounting.Run, accounting.Step, error) {
			step.LinfParts = section.(*Section).LinfParts
			return run, step, nil
		},
	}
}
