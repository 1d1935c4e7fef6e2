package optim

import (
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
)

// DPSGDConfig configures DP-SGD (Abadi et al. 2016, Algorithm 1).
type DPSGDConfig struct {
	// NoiseMultiplier is σ: the noise added to the clipped gradient sum has standard deviation
	// σ·C per coordinate. 0 gives the non-private baseline.
	NoiseMultiplier float64
	// ClipNorm is C, the per-sample l2 clipping norm; +Inf (only with σ = 0) disables
	// clipping.
	ClipNorm float64
	// Rule is the update rule applied to the privatised gradient; nil means plain SGD.
	Rule UpdateRule
	// Schedule gives the learning rate of each step.
	Schedule Schedule
}

// DPSGD is differentially private SGD (Abadi et al. 2016, Algorithm 1): per-sample clipping to C,
// Gaussian noise N(0, σ²C²I) added to the sum, division by the expected batch size (q·n for
// Poisson sampling) or the fixed batch size, then the update rule:
//
//	g̃ = (Σ_{i∈B} min(1, C/‖g_i‖)·g_i + N(0, σ²C²I)) / b,   θ ← Rule(θ, g̃, η_k).
//
// With σ = 0 and C = +Inf it is plain mini-batch SGD through the same code path; such steps
// return an accounting.NonPrivate record, which every accountant refuses.
type DPSGD struct {
	cfg   DPSGDConfig
	noise *Noise
	grad  []float32
	norms []float64
	k     int
}

// NewDPSGD returns a DP-SGD optimizer drawing its noise from noise.
func NewDPSGD(cfg DPSGDConfig, noise *Noise) (*DPSGD, error) {
	if noise == nil {
		return nil, errors.New("optim: DP-SGD needs a noise source: use NewNoise()")
	}
	if err := checkNoiseClip(cfg.NoiseMultiplier, cfg.ClipNorm); err != nil {
		return nil, err
	}
	if cfg.Schedule == nil {
		return nil, errors.New("optim: DP-SGD needs a learning-rate schedule")
	}
	if err := checkStepSize(cfg.Schedule.StepSize(0), 0); err != nil {
		return nil, err
	}
	if cfg.Rule == nil {
		cfg.Rule = &SGD{}
	}
	return &DPSGD{cfg: cfg, noise: noise}, nil
}

// checkNoiseClip accepts σ > 0 with 0 < C < ∞ (private) and σ = 0 with C > 0 (non-private).
func checkNoiseClip(sigma, clip float64) error {
	if !(sigma >= 0) || math.IsInf(sigma, 0) {
		return fmt.Errorf("optim: noise multiplier %v must be finite and non-negative (0: non-private)", sigma)
	}
	if !(clip > 0) {
		return fmt.Errorf("optim: clip norm %v must be positive (+Inf: no clipping, non-private only)", clip)
	}
	if sigma > 0 && math.IsInf(clip, 1) {
		return errors.New("optim: a private step needs a finite clip norm: with clip = +Inf the sensitivity is unbounded")
	}
	return nil
}

// UpdateRule returns the name of the configured update rule.
func (o *DPSGD) UpdateRule() string { return o.cfg.Rule.Name() }

// Stateful reports whether the update rule carries state across steps.
func (o *DPSGD) Stateful() bool { return o.cfg.Rule.Stateful() }

// Steps returns the number of steps taken.
func (o *DPSGD) Steps() int { return o.k }

// Step takes one DP-SGD step on m's parameters with batch b, drawn as info declares.
//
// The record declares Sensitivity = C and NoiseStd = σC in units of the gradient sum, so
// NoiseMultiplier = σ; under replace-one adjacency an accountant doubles the sensitivity.
func (o *DPSGD) Step(m GradientOracle, b Batch, info BatchInfo) (Result, error) {
	p, err := plan(info, b)
	if err != nil {
		return Result{}, err
	}
	lr := o.cfg.Schedule.StepSize(o.k)
	if err := checkStepSize(lr, o.k); err != nil {
		return Result{}, err
	}
	params := m.Params()
	if err := o.checkRuleLen(len(params)); err != nil {
		return Result{}, err
	}
	o.grad = resize(o.grad, len(params))
	var st Stats
	if b.N > 0 {
		// An empty Poisson batch is a legitimate draw: the step still releases pure noise.
		if cap(o.norms) < b.N {
			o.norms = make([]float64, b.N)
		}
		st, err = m.ClippedGradSum(b, o.cfg.ClipNorm, o.grad, o.norms[:b.N])
		if err != nil {
			return Result{}, fmt.Errorf("optim: DP-SGD step %d: %w", o.k+1, err)
		}
	}
	std := o.std() // σ = 0 with C = +Inf: no noise, not NaN
	if !o.noise.AddGaussianScaled(o.grad, std, 1/p.norm) {
		return Result{}, fmt.Errorf("optim: DP-SGD step %d: %w", o.k+1, ErrNotFinite)
	}
	o.cfg.Rule.Apply(params, o.grad, lr)
	rec := p.record(o.cfg.ClipNorm, std, lr)
	o.k++
	return Result{Records: []accounting.Step{rec}, Stats: st, StepSize: lr}, nil
}

// ErrNotFinite reports a privatised gradient with NaN or infinite coordinates; the
// parameters were not updated. Training has diverged (or an input is not finite).
var ErrNotFinite = errors.New("the gradient is not finite (NaN or infinite coordinates); the parameters were not updated")

// scaleFinite multiplies g by s and returns an error if any element is not finite.
func scaleFinite(g []float32, s float64) error {
	if !scaleChunk(g, s) {
		return ErrNotFinite
	}
	return nil
}

// resize returns a zeroed slice of length n, reusing buf's storage when it is large enough.
func resize(buf []float32, n int) []float32 {
	if cap(buf) < n {
		return make([]float32, n)
	}
	buf = buf[:n]
	clear(buf)
	return buf
}
