package dpsgld

import (
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// Config configures DP-SGLD (Ryffel, Bach & Pointcheval, "Differential Privacy Guarantees for Stochastic Gradient Langevin Dynamics").
type Config struct {
	// Sigma is σ: the Langevin noise added to the parameters at step k has standard deviation
	// √(2η_k)·σ per coordinate (the temperature is σ²). It must be constant over the run.
	Sigma float64
	// Constants are the loss and domain constants; see SoftmaxConstants.
	Constants Constants
	// Schedule gives η_k; nil means the constant η = 1/(2β) of the paper's Section 5.2. Use
	// Decreasing for η_k = 1/(2β + λk/2).
	Schedule optim.Schedule
	// PlannedSteps, when positive, makes New check η_k < 1/β for every k below it, so a
	// schedule that would break the precondition fails before training, not during it.
	PlannedSteps int
}

// Optimizer is projected noisy mini-batch SGD with Langevin noise, Ryffel, Bach & Pointcheval's Algorithm 1 / Eq. (1):
//
//	θ_0     = Π(N(0, (2σ²/λ)·I))                                    (Init)
//	θ_{k+1} = Π(θ_k − η_k·(∇L_{B_k}(θ_k) + λθ_k) + √(2η_k)·σ·Z_k)     (Step)
//
// where ∇L_{B_k} is the mean data-term gradient over a fresh uniformly random batch of exactly
// m distinct examples, the L2 term covers every parameter (bias included), and Π is the
// projection onto the ball of radius R. Only the last iterate may be released (Theorem 3.1).
//
// Each step returns one record (steps are counted, never epochs: Theorem 3.1's K is the number of steps) with Sampling
// without-replacement (or full), Neighbouring replace-one, StepSize η_k, BatchSize m,
// DatasetSize n, and, in units of the gradient sum like every optim record,
//
//	Sensitivity = L,  NoiseStd = m·σ·√(2/η_k),  NoiseMultiplier = NoiseStd/L,
//
// because the parameter-space noise √(2η_k)σ equals (η_k/m)·NoiseStd. An accountant recovers
// σ = NoiseStd·√(StepSize/2)/BatchSize; the paper's drift sensitivity is S_g = 2L/n.
type Optimizer struct {
	cfg    Config
	noise  *optim.Noise
	grad   []float32
	norms  []float64
	xbuf   []float32
	k      int
	inited bool
	// initErr is Init's error (a non-finite θ_0), returned by the first Step.
	initErr error
}

// New returns a DP-SGLD optimizer after checking the constants and the step-size
// precondition η_k < 1/β of Ryffel, Bach & Pointcheval's Lemma 3.3.
func New(cfg Config, noise *optim.Noise) (*Optimizer, error) {
	if noise == nil {
		return nil, errors.New("dpsgld: DP-SGLD needs a noise source: use NewNoise()")
	}
	if !(cfg.Sigma > 0) || math.IsInf(cfg.Sigma, 0) {
		return nil, fmt.Errorf("dpsgld: DP-SGLD noise σ = %v must be positive and finite", cfg.Sigma)
	}
	if err := cfg.Constants.Validate(); err != nil {
		return nil, err
	}
	if cfg.Schedule == nil {
		cfg.Schedule = optim.Constant{Rate: 1 / (2 * cfg.Constants.Smoothness)}
	}
	o := &Optimizer{cfg: cfg, noise: noise}
	for k := 0; k < max(cfg.PlannedSteps, 1); k++ {
		if _, err := o.stepSize(k); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// stepSize returns η_k after checking 0 < η_k < 1/β.
func (o *Optimizer) stepSize(k int) (float64, error) {
	eta := o.cfg.Schedule.StepSize(k)
	if err := optim.CheckStepSize(eta, k); err != nil {
		return 0, err
	}
	beta := o.cfg.Constants.Smoothness
	if !(eta*beta < 1) {
		// Ryffel, Bach & Pointcheval, Lemma 3.3: the privacy bound needs η < 1/β.
		return 0, fmt.Errorf("dpsgld: DP-SGLD step size η_%d = %v is not below 1/β = %v, which its privacy bound needs; use η = 1/(2β) = %v or the decreasing schedule", k, eta, 1/beta, 1/(2*beta))
	}
	return eta, nil
}

// UpdateRule returns "sgd": DP-SGLD keeps no state besides the iterate.
func (o *Optimizer) UpdateRule() string { return "sgd" }

// Stateful returns false.
func (o *Optimizer) Stateful() bool { return false }

// Steps returns the number of steps taken.
func (o *Optimizer) Steps() int { return o.k }

// Init draws the initial iterate θ_0 ~ Π(N(0, (2σ²/λ)·I)) into params, as Lemma 3.3 requires.
// It must be called once before the first Step.
func (o *Optimizer) Init(params []float32) {
	o.noise.FillGaussian(params, math.Sqrt(2*o.cfg.Sigma*o.cfg.Sigma/o.cfg.Constants.StrongConvexity))
	if err := ProjectL2Ball(params, o.cfg.Constants.Radius); err != nil {
		o.initErr = fmt.Errorf("dpsgld: DP-SGLD's initial draw θ_0 ~ N(0, 2σ²/λ·I) is not finite (%w): σ = %g and λ = optimizer.dp_sgld.regularization = %g must give a finite variance",
			err, o.cfg.Sigma, o.cfg.Constants.StrongConvexity)
	}
	o.inited = true
}

// Step takes one DP-SGLD step on m's parameters. info.Scheme() must be without-replacement (a
// fresh uniform subset of exactly BatchSize examples, as Algorithm 1's "sampled with replacement" means) or full batch.
func (o *Optimizer) Step(m optim.GradientOracle, b data.Batch, info data.BatchInfo) (optim.Result, error) {
	if !o.inited {
		return optim.Result{}, errors.New("dpsgld: DP-SGLD was not initialised: call Init(params) before the first step (θ_0 must be drawn from the projected Gaussian)")
	}
	if o.initErr != nil {
		return optim.Result{}, o.initErr
	}
	switch sc := accounting.Sampling(info.Scheme()); sc {
	case accounting.WithoutReplacement, accounting.FullBatch:
	default:
		return optim.Result{}, fmt.Errorf("dpsgld: DP-SGLD needs fresh fixed-size batches drawn without replacement each step (sampling %q), got %q: Theorem 3.1 does not cover it", accounting.WithoutReplacement, sc)
	}
	p, err := optim.PlanBatch(info, b)
	if err != nil {
		return optim.Result{}, err
	}
	eta, err := o.stepSize(o.k)
	if err != nil {
		return optim.Result{}, err
	}
	c := o.cfg.Constants
	if c.FeatureNorm > 0 {
		if b, err = o.boundFeatures(b, c.FeatureNorm); err != nil {
			return optim.Result{}, err
		}
	}
	params := m.Params()
	o.grad = optim.Resize(o.grad, len(params))
	if cap(o.norms) < b.N {
		o.norms = make([]float64, b.N)
	}
	st, err := m.ClippedGradSum(b, c.DataLipschitz, o.grad, o.norms[:b.N])
	if err != nil {
		return optim.Result{}, fmt.Errorf("dpsgld: DP-SGLD step %d: %w", o.k+1, err)
	}
	if err := optim.ScaleFinite(o.grad, 1/p.Norm); err != nil {
		return optim.Result{}, fmt.Errorf("dpsgld: DP-SGLD step %d: %w", o.k+1, err)
	}
	lambda := c.StrongConvexity
	for i, g := range o.grad {
		th := float64(params[i])
		params[i] = float32(th - eta*(float64(g)+lambda*th))
	}
	o.noise.AddGaussian(params, math.Sqrt(2*eta)*o.cfg.Sigma)
	if err := ProjectL2Ball(params, c.Radius); err != nil {
		return optim.Result{}, fmt.Errorf("dpsgld: DP-SGLD step %d: the iterate is not finite after the update with η = %g (%w): lower optimizer.learning_rate (or set optimizer.dp_sgld.decreasing: true)", o.k+1, eta, err)
	}
	rec := o.record(p, eta)
	o.k++
	return optim.Result{Records: []accounting.Step{rec}, Stats: st, StepSize: eta}, nil
}

// boundFeatures returns b with every example rescaled to ‖x‖₂ ≤ r (x ← x·min(1, r/‖x‖)), a
// per-record map that makes the public constants hold; b.X is copied only if a row changes.
func (o *Optimizer) boundFeatures(b data.Batch, r float64) (data.Batch, error) {
	if b.N == 0 {
		return b, nil
	}
	if len(b.X)%b.N != 0 {
		return b, fmt.Errorf("dpsgld: batch of %d examples has %d feature values, not a multiple", b.N, len(b.X))
	}
	d := len(b.X) / b.N
	copied := false
	for i := range b.N {
		row := b.X[i*d : (i+1)*d]
		if optim.Norm2(row) <= r {
			continue
		}
		if !copied {
			o.xbuf = append(o.xbuf[:0], b.X...)
			b.X = o.xbuf
			copied = true
		}
		// A non-finite row is left as it is: the model clips a non-finite per-example
		// gradient to zero and counts it (Stats.NonFinite), so the run does not stop on it.
		_, _ = optim.ClipL2(b.X[i*d:(i+1)*d], r)
	}
	return b, nil
}

// ProjectL2Ball projects θ onto the l2 ball of radius r: θ ← θ·min(1, r/‖θ‖₂). The result's
// norm, computed in float64, never exceeds r. A non-finite θ is left as it is and is an error
// wrapping ErrNotFiniteVector.
func ProjectL2Ball(theta []float32, r float64) error {
	_, err := optim.ClipL2(theta, r)
	return err
}

// NoiseStream implements optim.NoiseDrawer: the stream the optimizer was built with.
func (o *Optimizer) NoiseStream() *optim.Noise { return o.noise }

// Initialized implements optim.Initializer: whether Init ran (or a restored state says it did).
func (o *Optimizer) Initialized() bool { return o.inited }
