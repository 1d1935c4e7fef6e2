package modelmix

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// Config configures DP-SGD with ModelMix (Xiao, Wan & Devadas, "Differentially Private Deep Learning with ModelMix").
type Config struct {
	// NoiseMultiplier is z: the noise on the clipped gradient sum is N(0, (z·c)²·I).
	// 0 gives the non-private variant (Xiao, Wan & Devadas, Fig. 2 a–b).
	NoiseMultiplier float64
	// ClipNorm is the l2 clipping norm c.
	ClipNorm float64
	// LinfParts is Algorithm 2's p ≥ 1: after l2 clipping every coordinate is truncated to
	// ±c/√p. 1 (or 0) is plain l2 clipping.
	LinfParts int
	// Schedule gives η_k, the learning rate on the mean gradient (G + Δ)/(n·q).
	Schedule optim.Schedule
	// MixRatio is κ in the paper's convention τ_k = κ·η_k (Xiao, Wan & Devadas, Section 5). Ignored when
	// MixThreshold is set.
	MixRatio float64
	// MixThreshold, when set, gives the mixing threshold τ_k in parameter units directly.
	MixThreshold optim.Schedule
	// Rule must be nil or *SGD: state that accumulates the hidden noisy gradients (momentum,
	// Adam) is not covered by Theorem 4.1 (its proof, Appendix C, conditions on the public iterates only). SGD's weight decay is
	// applied at w_{k−1}, a public iterate.
	Rule optim.UpdateRule
	// Momentum is μ ∈ [0, 1) of heavy-ball momentum on the privatised gradient (see
	// MixMomentum); 0 is Algorithm 1. It is an opt-in outside ModelMix's guarantee: the
	// velocity carries every earlier noisy gradient, which the secret mixing weights keep
	// hidden from the adversary, so Theorem 4.1's per-step analysis conditioned on the public
	// iterates (Appendix C) no longer applies. With μ > 0 UpdateRule is "momentum", which the
	// modelmix accountant refuses to give a number for; the sampled-Gaussian RDP of the same
	// noise (every noisy sum released) still covers the run.
	Momentum float64
}

// Optimizer is DP-SGD with ModelMix, Xiao, Wan & Devadas's Algorithm 1 in the mean-normalised form of
// their experiments:
// Poisson sampling with rate q, per-sample l2 (+ l∞, Algorithm 2) clipping, Gaussian noise on the
// sum, and a step that starts from a uniformly random point of the box spanned by the last two
// iterates, with gaps below τ_k widened first (lines 6–8, sign(0) := +1):
//
//	w_k(j) = u(j)·w_{k−1}(j) + (1−u(j))·w_{k−2}(j) − η_k·((G + Δ)(j)/(n·q) + λ·w_{k−1}(j)),
//
// u(j) ~ U[0,1) fresh per coordinate per step from the secret generator, never stored. Every
// coordinate is mixed. Models must not use BatchNorm (per-example gradients must be independent; models has none).
//
// Each step's record declares, in units of the gradient sum: Sensitivity = c,
// NoiseStd = z·c, MixWidth L = τ_k·n·q/η_k (Theorem 4.1's width τ/η rescaled for the mean update), LinfParts = p.
type Optimizer struct {
	cfg   Config
	wd    float64
	noise *optim.Noise
	grad  []float32
	norms []float64
	prev  []float32 // w_{k−2}: the previous, public iterate (after gap enforcement)
	vel   []float32 // the heavy-ball velocity v when Config.Momentum > 0: hidden, carries noisy gradients
	k     int
}

// New returns a ModelMix optimizer, refusing the configurations outside what its
// guarantee (Theorem 4.1 and its proof, Appendix C) covers.
func New(cfg Config, noise *optim.Noise) (*Optimizer, error) {
	if noise == nil {
		return nil, errors.New("modelmix: ModelMix needs a noise source: use NewNoise()")
	}
	if err := optim.CheckNoiseClip(cfg.NoiseMultiplier, cfg.ClipNorm); err != nil {
		return nil, err
	}
	if math.IsInf(cfg.ClipNorm, 0) {
		return nil, errors.New("modelmix: ModelMix needs a finite clip norm")
	}
	if cfg.LinfParts < 0 {
		return nil, fmt.Errorf("modelmix: ModelMix l∞ parts p = %d must be at least 1", cfg.LinfParts)
	}
	if cfg.LinfParts == 0 {
		cfg.LinfParts = 1
	}
	if cfg.Schedule == nil {
		return nil, errors.New("modelmix: ModelMix needs a learning-rate schedule")
	}
	if cfg.MixThreshold == nil && (!(cfg.MixRatio > 0) || math.IsInf(cfg.MixRatio, 0)) {
		return nil, fmt.Errorf("modelmix: ModelMix mixing ratio κ = %v must be positive and finite (τ = κη); without mixing use DP-SGD", cfg.MixRatio)
	}
	if !(cfg.Momentum >= 0 && cfg.Momentum < 1) {
		return nil, fmt.Errorf("modelmix: ModelMix momentum μ = %v must be in [0, 1) (0 is Algorithm 1's plain step)", cfg.Momentum)
	}
	var wd float64
	switch r := cfg.Rule.(type) {
	case nil:
	case *optim.SGD:
		wd = r.WeightDecay
	default:
		// Theorem 4.1 does not cover state carried across steps.
		return nil, fmt.Errorf("modelmix: ModelMix cannot use update rule %q: its state would carry the hidden noisy gradients across steps, which ModelMix's guarantee does not cover; use sgd (heavy-ball momentum outside the guarantee is Config.Momentum)", r.Name())
	}
	o := &Optimizer{cfg: cfg, wd: wd, noise: noise}
	if _, _, err := o.rates(0); err != nil {
		return nil, err
	}
	return o, nil
}

// rates returns η_k and τ_k.
func (o *Optimizer) rates(k int) (eta, tau float64, err error) {
	eta = o.cfg.Schedule.StepSize(k)
	if err := optim.CheckStepSize(eta, k); err != nil {
		return 0, 0, err
	}
	if o.cfg.MixThreshold != nil {
		tau = o.cfg.MixThreshold.StepSize(k)
	} else {
		tau = o.cfg.MixRatio * eta
	}
	if !(tau > 0) || math.IsInf(tau, 0) {
		return 0, 0, fmt.Errorf("modelmix: ModelMix mixing threshold τ_%d = %v must be positive and finite: every coordinate must be mixed", k, tau)
	}
	return eta, tau, nil
}

// UpdateRule returns "sgd", or "momentum" when Config.Momentum > 0: the run declaration
// accountants check (the modelmix accountant refuses "momentum").
func (o *Optimizer) UpdateRule() string {
	if o.cfg.Momentum > 0 {
		return "momentum"
	}
	return "sgd"
}

// Stateful reports whether noisy gradients are carried across steps: only with
// Config.Momentum > 0 (the previous iterate ModelMix keeps is public).
func (o *Optimizer) Stateful() bool { return o.cfg.Momentum > 0 }

// Steps returns the number of steps taken.
func (o *Optimizer) Steps() int { return o.k }

// Step takes one ModelMix step on m's parameters. info.Scheme() must be Poisson; the gradient
// sum is divided by the fixed n·q, never by the realised batch size.
func (o *Optimizer) Step(m optim.GradientOracle, b data.Batch, info data.BatchInfo) (optim.Result, error) {
	if sc := accounting.Sampling(info.Scheme()); sc != accounting.Poisson {
		// Theorem 4.1 assumes Poisson sampling.
		return optim.Result{}, fmt.Errorf("modelmix: ModelMix needs Poisson sampling (optimizer.sampling: poisson), got %q", sc)
	}
	p, err := optim.PlanBatch(info, b)
	if err != nil {
		return optim.Result{}, err
	}
	eta, tau, err := o.rates(o.k)
	if err != nil {
		return optim.Result{}, err
	}
	params := m.Params()
	if o.prev == nil {
		// w_{−1} = w_0 (Algorithm 1 leaves the initial states unspecified): step 1 then widens every gap to τ_1.
		o.prev = append([]float32(nil), params...)
	}
	if len(o.prev) != len(params) {
		return optim.Result{}, fmt.Errorf("modelmix: ModelMix parameter count changed from %d to %d", len(o.prev), len(params))
	}
	o.grad = optim.Resize(o.grad, len(params))
	var st data.Stats
	if b.N > 0 {
		st, err = o.gradSum(m, b)
		if err != nil {
			return optim.Result{}, fmt.Errorf("modelmix: ModelMix step %d: %w", o.k+1, err)
		}
	}
	c := o.cfg.ClipNorm
	std := o.cfg.NoiseMultiplier * c
	if !o.noise.AddGaussianScaled(o.grad, std, 1/p.Norm) {
		return optim.Result{}, fmt.Errorf("modelmix: ModelMix step %d: %w", o.k+1, optim.ErrNotFinite)
	}
	if o.cfg.Momentum > 0 {
		if o.vel == nil {
			o.vel = make([]float32, len(params))
		}
		if len(o.vel) != len(params) {
			return optim.Result{}, fmt.Errorf("modelmix: ModelMix velocity has %d values for %d parameters", len(o.vel), len(params))
		}
		MixMomentum(params, o.prev, o.grad, o.vel, eta, tau, o.wd, o.cfg.Momentum, o.noise)
	} else {
		Mix(params, o.prev, o.grad, eta, tau, o.wd, o.noise)
	}
	rec := o.record(p, eta, tau)
	o.k++
	return optim.Result{Records: []accounting.Step{rec}, Stats: st, StepSize: eta}, nil
}

// gradSum writes the sum of clipped per-sample gradients into o.grad: through the model's
// ghost clipping for p = 1, through materialised per-sample gradients and Algorithm 2 for p > 1.
func (o *Optimizer) gradSum(m optim.GradientOracle, b data.Batch) (data.Stats, error) {
	c, parts := o.cfg.ClipNorm, o.cfg.LinfParts
	if parts == 1 {
		if cap(o.norms) < b.N {
			o.norms = make([]float64, b.N)
		}
		return m.ClippedGradSum(b, c, o.grad, o.norms[:b.N])
	}
	var clipped, bad atomic.Int64
	st, err := m.PerSampleGradSum(b, func(i int, g []float32) {
		ok, err := optim.ClipL2Linf(g, c, parts)
		if err != nil {
			// A total per-example function: a contribution that cannot be clipped (not
			// finite) is clipped to zero and counted, never a reason to stop.
			clear(g)
			bad.Add(1)
			return
		}
		if ok {
			clipped.Add(1)
		}
	}, o.grad)
	st.Clipped = int(clipped.Load())
	st.NonFinite += int(bad.Load())
	return st, err
}

// Mix is ModelMix's update (Xiao, Wan & Devadas, Algorithm 1 lines 4–10). On entry w1 holds w_{k−1}
// and w2 holds w_{k−2}; g is the privatised mean gradient. Every coordinate whose gap
// |w_{k−1} − w_{k−2}| is below tau is widened by tau/2 on each side (sign(0) := +1), then
//
//	w1 ← u·w_{k−1} + (1−u)·w_{k−2} − eta·(g + wd·w_{k−1}),  u ~ U[0,1) fresh per coordinate,
//	w2 ← w_{k−1} after widening.
//
// The weights u come from noise and are not kept. Arithmetic is in float64, so the box used has
// every side at least tau even where float32 could not represent the widened iterates.
func Mix(w1, w2, g []float32, eta, tau, wd float64, noise *optim.Noise) {
	mix(w1, w2, g, nil, eta, tau, wd, 0, noise)
}

// MixMomentum is Mix with heavy-ball momentum μ on the privatised gradient (Polyak 1964, in
// the undampened form of PyTorch's SGD, which the Tramèr & Boneh code that Xiao, Wan & Devadas's
// Section 5.1 follows uses with μ = 0.9): with v the velocity,
//
//	v ← μ·v + g + wd·w_{k−1},
//	w1 ← u·w_{k−1} + (1−u)·w_{k−2} − eta·v,  w2 ← w_{k−1} after widening,
//
// v stored in float32 and the step taken with its float64 value (as optim.Momentum does).
// v carries every earlier noisy gradient into the step; Theorem 4.1 does not cover it (see
// Config.Momentum).
func MixMomentum(w1, w2, g, v []float32, eta, tau, wd, mu float64, noise *optim.Noise) {
	if len(v) != len(w1) {
		panic(fmt.Sprintf("modelmix: length mismatch: %d parameters, %d velocity values", len(w1), len(v)))
	}
	mix(w1, w2, g, v, eta, tau, wd, mu, noise)
}

// mix is Mix, and MixMomentum when v is not nil.
func mix(w1, w2, g, v []float32, eta, tau, wd, mu float64, noise *optim.Noise) {
	if len(w2) != len(w1) || len(g) != len(w1) {
		panic(fmt.Sprintf("modelmix: length mismatch: %d parameters, %d previous, %d gradient values", len(w1), len(w2), len(g)))
	}
	half := tau / 2
	rng := noise.Rand()
	for j := range w1 {
		a, b := float64(w1[j]), float64(w2[j])
		grad := float64(g[j]) + wd*a
		if v != nil {
			grad += mu * float64(v[j])
			v[j] = float32(grad)
		}
		if gap := a - b; math.Abs(gap) < tau {
			if gap >= 0 {
				a, b = a+half, b-half
			} else {
				a, b = a-half, b+half
			}
		}
		u := rng.Float64()
		w1[j] = float32(u*a + (1-u)*b - eta*grad)
		w2[j] = float32(a)
	}
}

// NoiseStream implements optim.NoiseDrawer: the stream the optimizer was built with.
func (o *Optimizer) NoiseStream() *optim.Noise { return o.noise }
