package dpsgd

import (
	"math"

	"github.com/dptrain/dptrain/algorithm"
	"github.com/dptrain/dptrain/optim"
)

// Names of DP-SGD and its non-private baseline in optimizer.algorithm.
const (
	Name         = "dp-sgd"
	BaselineName = "sgd"
)

// Algorithm is DP-SGD (Abadi et al., "Deep Learning with Differential Privacy", Algorithm 1)
// with any update rule.
func Algorithm() algorithm.Algorithm {
	return algorithm.Algorithm{
		Name: Name, Private: true, ClipNorm: true, DataParallel: true,
		Accountants:    []string{"rdp", "pld"},
		PostProcessing: algorithm.UpdateKeys,
		Prepare: func(e algorithm.Env) (algorithm.Plan, error) {
			o := e.Config.Optimizer
			return algorithm.Plan{
				Run: algorithm.ClipNormRun(e),
				NewOptimizer: func(sigma float64, noise *optim.Noise) (optim.Optimizer, error) {
					rule, err := algorithm.UpdateRule(o)
					if err != nil {
						return nil, err
					}
					return New(Config{NoiseMultiplier: sigma, ClipNorm: o.ClipNorm, Rule: rule, Schedule: e.Schedule}, noise)
				},
			}, nil
		},
	}
}

// Baseline is the non-private baseline sgd: DP-SGD's code path with no clipping and no noise.
func Baseline() algorithm.Algorithm {
	return algorithm.Algorithm{
		Name: BaselineName, DataParallel: true,
		Sampling:       []string{"shuffled", "poisson", "shuffled-once", "without-replacement", "poisson-with-rejection"},
		PostProcessing: algorithm.UpdateKeys,
		Prepare: func(e algorithm.Env) (algorithm.Plan, error) {
			o := e.Config.Optimizer
			return algorithm.Plan{
				NoAuto: "sgd is the non-private baseline",
				NewOptimizer: func(_ float64, noise *optim.Noise) (optim.Optimizer, error) {
					rule, err := algorithm.UpdateRule(o)
					if err != nil {
						return nil, err
					}
					return New(Config{NoiseMultiplier: 0, ClipNorm: math.Inf(1), Rule: rule, Schedule: e.Schedule}, noise)
				},
			}, nil
		},
	}
}
