package dpsgd

import (
	"errors"
	"fmt"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// Config configures DP-SGD (Abadi et al. 2016, Algorithm 1).
type Config struct {
	// NoiseMultiplier is σ: the noise added to the clipped gradient sum has standard deviation
	// σ·C per coordinate. 0 gives the non-private baseline.
	NoiseMultiplier float64
	// ClipNorm is C, the per-sample l2 clipping norm; +Inf (only with σ = 0) disables
	// clipping.
	ClipNorm float64
	// Rule is the update rule applied to the privatised gradient; nil means plain SGD.
	Rule optim.UpdateRule
	// Schedule gives the learning rate of each step.
	Schedule optim.Schedule
}

// Optimizer is differentially private SGD (Abadi et al. 2016, Algorithm 1): per-sample clipping to C,
// Gaussian noise N(0, σ²C²I) added to the sum, division by the expected batch size (q·n for
// Poisson sampling) or the fixed batch size, then the update rule:
//
//	g̃ = (Σ_{i∈B} min(1, C/‖g_i‖)·g_i + N(0, σ²C²I)) / b,   θ ← Rule(θ, g̃, η_k).
//
// With σ = 0 and C = +Inf it is plain mini-batch SGD through the same code path; such steps
// return an accounting.NonPrivate record, which every accountant refuses.
type Optimizer struct {
	cfg   Config
	noise *optim.Noise
	grad  []float32
	norms []float64
	k     int
}

// New returns a DP-SGD optimizer drawing its noise from noise.
func New(cfg Config, noise *optim.Noise) (*Optimizer, error) {
	if noise == nil {
		return nil, errors.New("dpsgd: DP-SGD needs a noise source: use NewNoise()")
	}
	if err := optim.CheckNoiseClip(cfg.NoiseMultiplier, cfg.ClipNorm); err != nil {
		return nil, err
	}
	if cfg.Schedule == nil {
		return nil, errors.New("dpsgd: DP-SGD needs a learning-rate schedule")
	}
	if err := optim.CheckStepSize(cfg.Schedule.StepSize(0), 0); err != nil {
		return nil, err
	}
	if cfg.Rule == nil {
		cfg.Rule = &optim.SGD{}
	}
	return &Optimizer{cfg: cfg, noise: noise}, nil
}

// UpdateRule returns the name of the configured update rule.
func (o *Optimizer) UpdateRule() string { return o.cfg.Rule.Name() }

// Stateful reports whether the update rule carries state across steps.
func (o *Optimizer) Stateful() bool { return o.cfg.Rule.Stateful() }

// Steps returns the number of steps taken.
func (o *Optimizer) Steps() int { return o.k }

// Step takes one DP-SGD step on m's parameters with batch b, drawn as info declares.
//
// The record declares Sensitivity = C and NoiseStd = σC in units of the gradient sum, so
// NoiseMultiplier = σ; under replace-one adjacency an accountant doubles the sensitivity.
func (o *Optimizer) Step(m optim.GradientOracle, b data.Batch, info data.BatchInfo) (optim.Result, error) {
	p, err := optim.PlanBatch(info, b)
	if err != nil {
		return optim.Result{}, err
	}
	lr := o.cfg.Schedule.StepSize(o.k)
	if err := optim.CheckStepSize(lr, o.k); err != nil {
		return optim.Result{}, err
	}
	params := m.Params()
	if err := optim.CheckRuleLen(o.cfg.Rule, len(params)); err != nil {
		return optim.Result{}, err
	}
	o.grad = optim.Resize(o.grad, len(params))
	var st data.Stats
	if b.N > 0 {
		// An empty Poisson batch is a legitimate draw: the step still releases pure noise.
		if cap(o.norms) < b.N {
			o.norms = make([]float64, b.N)
		}
		st, err = m.ClippedGradSum(b, o.cfg.ClipNorm, o.grad, o.norms[:b.N])
		if err != nil {
			return optim.Result{}, fmt.Errorf("dpsgd: DP-SGD step %d: %w", o.k+1, err)
		}
	}
	std := o.std() // σ = 0 with C = +Inf: no noise, not NaN
	if !o.noise.AddGaussianScaled(o.grad, std, 1/p.Norm) {
		return optim.Result{}, fmt.Errorf("dpsgd: DP-SGD step %d: %w", o.k+1, optim.ErrNotFinite)
	}
	o.cfg.Rule.Apply(params, o.grad, lr)
	rec := p.Record(o.cfg.ClipNorm, std, lr)
	o.k++
	return optim.Result{Records: []accounting.Step{rec}, Stats: st, StepSize: lr}, nil
}

// NoiseStream implements optim.NoiseDrawer: the stream the optimizer was built with.
func (o *Optimizer) NoiseStream() *optim.Noise { return o.noise }
