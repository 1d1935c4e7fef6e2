package dpulr

import (
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/algorithm"
	"github.com/dptrain/dptrain/optim"
)

// Name is DP-ULR's optimizer.algorithm name.
const Name = "dp-ulr"

// Section is optimizer.dp_ulr: DP-ULR's constants (Feng et al., "Forward Learning with Differential Privacy").
type Section struct {
	// Mode is "paper" (Algorithm 1 with the eigen-direction top-up, labelled paper) or
	// "certified" (the likelihood-ratio estimate clipped, plus explicit N(0, σ0²C²) noise).
	Mode string `yaml:"mode"`
	// Copies is K, noisy forward copies per example and layer.
	Copies int `yaml:"copies"`
	// AllLayers perturbs every layer at once (K passes per step) instead of one at a time.
	AllLayers bool `yaml:"all_layers"`
	// Sigma is the injected noise σ_l on every layer's pre-activation output, a public
	// constant (Feng et al.'s Eq. 7 is an upper bound on σ_l, so any σ_l within it is covered,
	// and a fixed one keeps each example's estimate independent of the rest of the batch).
	// 0: the paper's controller sets σ_l from the batch (paper mode only).
	Sigma float64 `yaml:"sigma"`
	// SigmaFloor and SigmaCap clamp the controller's σ_l; cap 0: none.
	SigmaFloor float64 `yaml:"sigma_floor"`
	SigmaCap   float64 `yaml:"sigma_cap"`
}

// Algorithm is DP-ULR (Feng et al., Algorithm 1; Optimizer): forward-only likelihood-ratio gradients on
// Poisson batches with rejection, accounted by the Sampled-with-Rejection Gaussian bound.
func Algorithm() algorithm.Algorithm {
	return algorithm.Algorithm{
		Name: Name, Private: true, ClipNorm: true,
		Sampling: []string{"poisson-with-rejection"}, SamplingReason: "Feng et al.'s Theorem 3.6 covers Poisson batches resampled below min_batch_size",
		Accountants:    []string{"ulr"},
		PostProcessing: algorithm.UpdateKeys,
		Section:        "dp_ulr", NewSection: func() any { return &Section{Mode: "paper", Copies: 1, SigmaFloor: 0.01} },
		Validate: func(c algorithm.Config, section any) []error {
			s := section.(*Section)
			var errs []error
			if s.Mode != "paper" && s.Mode != "certified" {
				errs = append(errs, fmt.Errorf("optimizer.dp_ulr.mode = %q: want paper or certified", s.Mode))
			}
			if s.Copies < 1 {
				errs = append(errs, fmt.Errorf("optimizer.dp_ulr.copies = %d: K must be at least 1", s.Copies))
			}
			if err := algorithm.Positive("optimizer.dp_ulr.sigma_floor", s.SigmaFloor); err != nil {
				errs = append(errs, err)
			}
			if !(s.Sigma >= 0) || math.IsInf(s.Sigma, 0) {
				errs = append(errs, fmt.Errorf("optimizer.dp_ulr.sigma = %v: a finite positive σ_l, or 0 for the paper's controller", s.Sigma))
			} else if s.Mode == "certified" && s.Sigma == 0 {
				errs = append(errs, fmt.Errorf("optimizer.dp_ulr.mode certified needs a public injected noise: set optimizer.dp_ulr.sigma (e.g. 1); the controller's σ_l is computed from the whole batch, so one example would move every other example's estimate"))
			}
			if s.SigmaCap != 0 && !(s.SigmaCap >= s.SigmaFloor) {
				errs = append(errs, fmt.Errorf("optimizer.dp_ulr.sigma_cap = %v: 0 (none) or at least sigma_floor = %v", s.SigmaCap, s.SigmaFloor))
			}
			return errs
		},
		Prepare: func(e algorithm.Env) (algorithm.Plan, error) {
			s, o := e.Section.(*Section), e.Config.Optimizer
			covered := 0
			for _, l := range e.Model.LinearLayers() {
				g := l.Geometry
				covered += g.In * g.Out
				if g.Bias {
					covered += g.Out
				}
			}
			if covered != len(e.Model.Params()) {
				return algorithm.Plan{}, fmt.Errorf("dp-ulr: model %s has parameters outside its dense and conv layers (normalisation layers): forward-only estimators cover dense and conv layers only; use a model without them", e.Model.Name())
			}
			return algorithm.Plan{
				Run: algorithm.ClipNormRun(e),
				NewOptimizer: func(sigma float64, noise *optim.Noise) (optim.Optimizer, error) {
					rule, err := algorithm.UpdateRule(o)
					if err != nil {
						return nil, err
					}
					return New(Config{Copies: s.Copies, NoiseMultiplier: sigma, ClipNorm: o.ClipNorm,
						Sigma: s.Sigma, SigmaFloor: s.SigmaFloor, SigmaCap: s.SigmaCap, Certified: s.Mode == "certified", AllLayers: s.AllLayers,
						Rule: rule, Schedule: e.Schedule}, noise)
				},
			}, nil
		},
		Compare: func(_ algorithm.Config, section any, run accounting.Run, step accounting.Step) (accounting.Run, accounting.Step, error) {
			if section.(*Section).Mode == "paper" {
				step.Mechanism = accounting.SampledWithRejectionGaussian
			}
			return run, step, nil
		},
	}
}
