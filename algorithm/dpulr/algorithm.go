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
	// Copies is K, noisy forward copies per example and layer (default DefaultCopies).
	Copies int `yaml:"copies"`
	// AllLayers perturbs every layer at once (K passes per step) instead of one at a time.
	AllLayers bool `yaml:"all_layers"`
	// Controller chooses the injected noise σ_l: ControllerFixed (the default) injects Sigma on
	// every layer at every step; ControllerEq7 runs the paper's privacy controller, which sets
	// σ_l from the batch by equality in Eq. 7, clamped to [SigmaFloor, SigmaCap] (paper mode
	// only).
	Controller string `yaml:"controller"`
	// Sigma is the fixed injected noise σ_l on every layer's pre-activation output, a public
	// constant (default DefaultSigma). Feng et al.'s Eq. 7 is an upper bound on σ_l and the
	// top-up of Section 3.2 covers any σ_l, so a fixed σ_l is within the paper; it also keeps
	// each example's estimate independent of the rest of the batch, which certified mode needs.
	// Unused with controller eq7.
	Sigma float64 `yaml:"sigma"`
	// SigmaFloor and SigmaCap clamp the Eq. 7 controller's σ_l (controller eq7 only); floor
	// 0: DefaultSigmaFloor; cap 0: none.
	SigmaFloor float64 `yaml:"sigma_floor"`
	SigmaCap   float64 `yaml:"sigma_cap"`
}

// The values of optimizer.dp_ulr.controller.
const (
	// ControllerFixed injects the public constant optimizer.dp_ulr.sigma on every layer.
	ControllerFixed = "fixed"
	// ControllerEq7 is Feng et al.'s privacy controller: σ_l from the batch by Eq. 7.
	ControllerEq7 = "eq7"
)

// Defaults of optimizer.dp_ulr. With Eq. 7 applied with equality and K = 1 the controller's σ_l
// scales like 1/σ0 and grows during training (on the Table 1 MLP at σ0 = 1 it rose from 1–5 at
// the start to about 500 by step 520, and accuracy fell from 47% to 20%), so the default is a
// fixed σ_l = 1 with K = 16 copies (the K-average reduces the likelihood-ratio variance
// ∝ 1/(Kσ_l²) that the update sees, not the privacy noise, which the top-up or the explicit
// noise keeps at σ0·C).
const (
	DefaultSigma      = 1
	DefaultCopies     = 16
	DefaultSigmaFloor = 0.01
)

// Algorithm is DP-ULR (Feng et al., Algorithm 1; Optimizer): forward-only likelihood-ratio gradients on
// Poisson batches with rejection, accounted by the Sampled-with-Rejection Gaussian bound.
func Algorithm() algorithm.Algorithm {
	return algorithm.Algorithm{
		Name: Name, Private: true, ClipNorm: true,
		Sampling: []string{"poisson-with-rejection"}, SamplingReason: "Feng et al.'s Theorem 3.6 covers Poisson batches resampled below min_batch_size",
		Accountants:    []string{"ulr"},
		PostProcessing: algorithm.UpdateKeys,
		Section:        "dp_ulr", NewSection: func() any {
			return &Section{Mode: "paper", Copies: DefaultCopies, Controller: ControllerFixed, Sigma: DefaultSigma}
		},
		Validate: func(c algorithm.Config, section any) []error {
			s := section.(*Section)
			var errs []error
			if s.Mode != "paper" && s.Mode != "certified" {
				errs = append(errs, fmt.Errorf("optimizer.dp_ulr.mode = %q: want paper or certified", s.Mode))
			}
			if s.Copies < 1 {
				errs = append(errs, fmt.Errorf("optimizer.dp_ulr.copies = %d: K must be at least 1", s.Copies))
			}
			errs = append(errs, s.validateSigma()...)
			return errs
		},
		Prepare: func(e algorithm.Env) (algorithm.Plan, error) {
			s, o := e.Section.(*Section), e.Config.Optimizer
			covered := 0
			for _, l := range e.Model.LinearLayers {
				g := l.Geometry
				covered += g.In * g.Out
				if g.Bias {
					covered += g.Out
				}
			}
			if covered != e.Model.Params() {
				return algorithm.Plan{}, fmt.Errorf("dp-ulr: model %s has parameters outside its dense and conv layers (normalisation layers): forward-only estimators cover dense and conv layers only; use a model without them", e.Model.Name)
			}
			return algorithm.Plan{
				Run: algorithm.ClipNormRun(e),
				NewOptimizer: func(sigma float64, noise *optim.Noise) (optim.Optimizer, error) {
					rule, err := algorithm.UpdateRule(o)
					if err != nil {
						return nil, err
					}
					cfg := Config{Copies: s.Copies, NoiseMultiplier: sigma, ClipNorm: o.ClipNorm,
						Sigma: s.Sigma, Certified: s.Mode == "certified", AllLayers: s.AllLayers,
						Rule: rule, Schedule: e.Schedule, Warnf: e.Warnf}
					if s.Controller == ControllerEq7 {
						cfg.Sigma, cfg.SigmaFloor, cfg.SigmaCap = 0, s.SigmaFloor, s.SigmaCap
						if cfg.SigmaFloor == 0 {
							cfg.SigmaFloor = DefaultSigmaFloor
						}
					}
					return New(cfg, noise)
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

// validateSigma checks the injected-noise keys. A config written when sigma 0 (the key's old
// default) meant the Eq. 7 controller, and sigma_floor set it apart, is refused with the fix
// rather than silently run with a fixed σ_l.
func (s *Section) validateSigma() []error {
	var errs []error
	switch s.Controller {
	case ControllerFixed:
		if !(s.Sigma > 0) || math.IsInf(s.Sigma, 0) {
			fix := ""
			if s.Sigma == 0 {
				fix = "; sigma 0 no longer selects the paper's Eq. 7 controller: set optimizer.dp_ulr.controller: eq7 for it"
			}
			errs = append(errs, fmt.Errorf("optimizer.dp_ulr.sigma = %v: the fixed injected noise σ_l must be finite and positive (default %v)%s", s.Sigma, DefaultSigma, fix))
		}
		if s.SigmaFloor != 0 || s.SigmaCap != 0 {
			errs = append(errs, fmt.Errorf("optimizer.dp_ulr.sigma_floor = %v, sigma_cap = %v clamp the Eq. 7 controller's σ_l, which is off (controller: fixed, σ_l = sigma = %v): set optimizer.dp_ulr.controller: eq7 to run the controller, or remove sigma_floor and sigma_cap", s.SigmaFloor, s.SigmaCap, s.Sigma))
		}
	case ControllerEq7:
		if s.Mode == "certified" {
			errs = append(errs, fmt.Errorf("optimizer.dp_ulr.controller eq7 with mode certified: the controller's σ_l is computed from the whole batch, so one example would move every other example's estimate and the clipped sum would not have sensitivity C; use controller: fixed (σ_l = optimizer.dp_ulr.sigma)"))
		}
		if !(s.SigmaFloor >= 0) || math.IsInf(s.SigmaFloor, 0) {
			errs = append(errs, fmt.Errorf("optimizer.dp_ulr.sigma_floor = %v: a finite positive floor, or 0 for %v", s.SigmaFloor, DefaultSigmaFloor))
		}
		floor := s.SigmaFloor
		if floor == 0 {
			floor = DefaultSigmaFloor
		}
		if s.SigmaCap != 0 && !(s.SigmaCap >= floor) {
			errs = append(errs, fmt.Errorf("optimizer.dp_ulr.sigma_cap = %v: 0 (none) or at least sigma_floor = %v", s.SigmaCap, floor))
		}
	default:
		errs = append(errs, fmt.Errorf("optimizer.dp_ulr.controller = %q: want %s (σ_l = optimizer.dp_ulr.sigma, the default) or %s (the paper's Eq. 7 controller)", s.Controller, ControllerFixed, ControllerEq7))
	}
	return errs
}
