package dptrain

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modes"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// ErrBudgetExhausted is returned by Session.Step, without running anything, when the next step
// would raise the stopping accountant's ε above Config.TargetEpsilon. Every later call returns
// it too: the session has stopped.
var ErrBudgetExhausted = errors.New("dptrain: the next step would exceed the target ε; the session has stopped")

// ErrPlanComplete is returned by Session.Step once the planned steps (Config.Steps or
// Config.Epochs) have all run.
var ErrPlanComplete = errors.New("dptrain: the planned steps have all run")

// maxPlannedSteps bounds the steps MakePrivateWithEpsilon replays to calibrate σ.
const maxPlannedSteps = 10_000_000

// Config describes a private DP-SGD run (Abadi et al. 2016, "Deep Learning with Differential
// Privacy", Algorithm 1) over an in-memory dataset. Every field that carries a privacy claim
// is checked by MakePrivate; a bad value is an error that names the field.
type Config struct {
	// BatchSize is the expected batch size b under Poisson sampling: each example joins each
	// batch independently with probability q = b/n. For the fixed-size schemes it is the
	// batch size.
	BatchSize int
	// Sampling is the sampling scheme; "" means data.SchemePoisson, the scheme the sampled
	// Gaussian mechanism's accountants (rdp, pld) are tightest for. The Session's own sampler
	// draws every batch and declares the scheme in every record.
	Sampling data.Scheme
	// ClipNorm is C, the per-example l2 clipping norm (finite, > 0).
	ClipNorm float64
	// NoiseMultiplier is σ: Gaussian noise of standard deviation σ·C is added to the clipped
	// gradient sum. MakePrivate needs σ > 0; MakePrivateWithEpsilon calibrates it and needs
	// it left 0.
	NoiseMultiplier float64
	// LearningRate is the constant step size η of plain SGD on the privatised mean gradient.
	LearningRate float64
	// Steps is the number of planned steps; alternatively Epochs (exactly one of them is
	// set). An epoch is 1/q steps under Poisson sampling, ⌊n/b⌋ or ⌈n/b⌉ for the fixed-size
	// schemes (data.Sampler.StepsPerEpoch).
	Steps  int
	Epochs float64
	// Delta is δ of the (ε, δ) guarantee; it must be below 1/n (at δ ≥ 1/n a mechanism may
	// publish whole records and still meet the guarantee).
	Delta float64
	// Accountants names the accountants that follow the run side by side (accounting/modes:
	// "rdp", "pld", "gdp", ...); nil means {"rdp"}.
	Accountants []string
	// StopAccountant is the accountant whose ε is held to TargetEpsilon and calibrated by
	// MakePrivateWithEpsilon; "" means the first of Accountants. It must be certified.
	StopAccountant string
	// TargetEpsilon, when positive, is the ε the session never exceeds: Step refuses, before
	// running it, any step after which the stopping accountant's ε would exceed it.
	// MakePrivateWithEpsilon needs it.
	TargetEpsilon float64
	// Seed, when set, fixes the sampler's and the noise's streams: the run is reproducible
	// and NOT private (anyone who knows the seed knows the noise), and Private reports false.
	// nil (the default) seeds both from crypto/rand.
	Seed *uint64
}

// Guarantee is one accountant's (ε, δ) statement about the steps run so far, with its label
// (certified or paper or approximate), or the reason it cannot give one (Err).
type Guarantee struct {
	accounting.Guarantee
	Err error
}

// StepResult is what one step did.
type StepResult struct {
	// Step counts the steps run, this one included.
	Step int
	// Batch is the sampler's description of the batch: step, epoch and its declaration
	// (scheme, rate, dataset size), which the records repeat.
	Batch data.BatchInfo
	// Records are what the step released, composed into every accountant.
	Records []accounting.Step
	// Stats are the model's un-noised statistics on the batch (loss sum, correct, size):
	// functions of private data, for monitoring only; never release them.
	Stats optim.Stats
}

// Session is a private training loop that owns its sampler, its optimizer, its live
// accountants and the rule that stops before the target ε is exceeded: each Step draws the
// next batch from the session's own sampler, so its records always declare the scheme that
// really drew the batch.
//
// A Session is not safe for concurrent use.
type Session struct {
	cfg     Config
	model   optim.GradientOracle
	x       []float32
	y       []int32
	d       int
	sampler data.Sampler
	opt     *optim.DPSGD
	noise   *optim.Noise
	live    *accounting.Live
	run     accounting.Run
	planned int
	stopped bool

	idx []int
	bx  []float32
	by  []int32
}

// MakePrivate returns a Session that trains model with DP-SGD on the n examples of x (n rows
// of d = len(x)/n features, row-major) and their labels y, as cfg says. Each call to Step takes
// one private step on model's parameters in place. x and y must not change while the session
// runs.
func MakePrivate(model optim.GradientOracle, x []float32, y []int32, cfg Config) (*Session, error) {
	if !(cfg.NoiseMultiplier > 0) || math.IsInf(cfg.NoiseMultiplier, 0) {
		return nil, fmt.Errorf("dptrain: Config.NoiseMultiplier %v must be a positive finite number: set σ (around 1 is common), or call MakePrivateWithEpsilon to calibrate it for a target ε", cfg.NoiseMultiplier)
	}
	return newSession(model, x, y, cfg)
}

// MakePrivateWithEpsilon is MakePrivate with σ calibrated: the smallest noise multiplier (to a
// relative tolerance of 1e-4, accounting.CalibrateRecords) for which the stopping accountant's
// ε after all planned steps is at most cfg.TargetEpsilon. Config.NoiseMultiplier must be 0.
// The session then also stops before any step that would exceed the target, so the calibration
// can only end training early, never overshoot.
func MakePrivateWithEpsilon(model optim.GradientOracle, x []float32, y []int32, cfg Config) (*Session, error) {
	if cfg.NoiseMultiplier != 0 {
		return nil, fmt.Errorf("dptrain: Config.NoiseMultiplier is %v: MakePrivateWithEpsilon calibrates σ; leave it 0, or call MakePrivate to use it", cfg.NoiseMultiplier)
	}
	if !(cfg.TargetEpsilon > 0) || math.IsInf(cfg.TargetEpsilon, 0) {
		return nil, fmt.Errorf("dptrain: Config.TargetEpsilon %v must be a positive finite number: MakePrivateWithEpsilon calibrates σ for it", cfg.TargetEpsilon)
	}
	probe := cfg
	probe.NoiseMultiplier = 1
	s, err := newSession(model, x, y, probe)
	if err != nil {
		return nil, err
	}
	sigma, err := s.calibrate(context.Background())
	if err != nil {
		return nil, err
	}
	cfg.NoiseMultiplier = sigma
	return newSession(model, x, y, cfg)
}

// newSession checks cfg and builds the session's noise, sampler, optimizer and accountants.
func newSession(model optim.GradientOracle, x []float32, y []int32, cfg Config) (*Session, error) {
	if model == nil {
		return nil, errors.New("dptrain: the model is nil: pass a models.Network or your own optim.GradientOracle")
	}
	n := len(y)
	if n == 0 {
		return nil, errors.New("dptrain: the dataset is empty: pass one label per example in y")
	}
	if len(x) == 0 || len(x)%n != 0 {
		return nil, fmt.Errorf("dptrain: %d feature values do not split into %d examples: x holds n rows of d features, row-major (len(x) = n·d)", len(x), n)
	}
	d := len(x) / n
	if m, ok := model.(interface{ InputShape() []int }); ok {
		want := 1
		for _, v := range m.InputShape() {
			want *= v
		}
		if want != d {
			return nil, fmt.Errorf("dptrain: the model takes %d features per example, the data have %d", want, d)
		}
	}
	if cfg.Sampling == "" {
		cfg.Sampling = data.SchemePoisson
	}
	if cfg.Sampling == data.SchemePoissonWithRejection {
		return nil, fmt.Errorf("dptrain: Config.Sampling %q is DP-ULR's scheme, which DP-SGD's record does not describe: use %q", cfg.Sampling, data.SchemePoisson)
	}
	if cfg.BatchSize <= 0 || cfg.BatchSize > n {
		return nil, fmt.Errorf("dptrain: Config.BatchSize %d must be between 1 and the %d examples", cfg.BatchSize, n)
	}
	if !(cfg.ClipNorm > 0) || math.IsInf(cfg.ClipNorm, 0) {
		return nil, fmt.Errorf("dptrain: Config.ClipNorm %v must be a positive finite number: it bounds each example's gradient (the sensitivity); 1 is a common start", cfg.ClipNorm)
	}
	if !(cfg.LearningRate > 0) || math.IsInf(cfg.LearningRate, 0) {
		return nil, fmt.Errorf("dptrain: Config.LearningRate %v must be a positive finite number", cfg.LearningRate)
	}
	if (cfg.Steps > 0) == (cfg.Epochs > 0) || cfg.Steps < 0 || !(cfg.Epochs >= 0) || math.IsInf(cfg.Epochs, 0) {
		return nil, fmt.Errorf("dptrain: Config.Steps = %d, Config.Epochs = %v: set exactly one of them to a positive number", cfg.Steps, cfg.Epochs)
	}
	if !(cfg.Delta > 0) || cfg.Delta >= 1/float64(n) {
		return nil, fmt.Errorf("dptrain: Config.Delta %v must be in (0, 1/n) = (0, %.3g) for %d examples: at δ ≥ 1/n a mechanism may publish whole records; use e.g. %.1g",
			cfg.Delta, 1/float64(n), n, math.Pow(10, math.Floor(math.Log10(0.1/float64(n)))))
	}
	if cfg.TargetEpsilon < 0 || math.IsNaN(cfg.TargetEpsilon) || math.IsInf(cfg.TargetEpsilon, 0) {
		return nil, fmt.Errorf("dptrain: Config.TargetEpsilon %v must be a finite number ≥ 0 (0: no target)", cfg.TargetEpsilon)
	}
	if len(cfg.Accountants) == 0 {
		cfg.Accountants = []string{"rdp"}
	}
	cfg.Accountants = append([]string(nil), cfg.Accountants...)
	if cfg.StopAccountant == "" {
		cfg.StopAccountant = cfg.Accountants[0]
	}
	listed := false
	for _, a := range cfg.Accountants {
		listed = listed || a == cfg.StopAccountant
	}
	if !listed {
		return nil, fmt.Errorf("dptrain: Config.StopAccountant %q is not among Config.Accountants %v: add it there", cfg.StopAccountant, cfg.Accountants)
	}

	s := &Session{cfg: cfg, model: model, x: x, y: y, d: d}
	if cfg.Seed != nil {
		s.noise = optim.NewSeededNoise(*cfg.Seed)
	} else {
		var err error
		if s.noise, err = optim.NewNoise(); err != nil {
			return nil, fmt.Errorf("dptrain: %w", err)
		}
	}
	// The sampler draws from its own stream, never the noise's.
	var err error
	if s.sampler, err = data.NewSampler(cfg.Sampling, n, cfg.BatchSize, 0, s.noise.Split().Rand()); err != nil {
		return nil, fmt.Errorf("dptrain: Config.Sampling, Config.BatchSize: %w", err)
	}
	if cfg.Steps > 0 {
		s.planned = cfg.Steps
	} else if cfg.Sampling == data.SchemePoisson {
		s.planned = int(math.Ceil(cfg.Epochs/s.sampler.SampleRate() - 1e-9))
	} else {
		s.planned = int(math.Ceil(cfg.Epochs*float64(s.sampler.StepsPerEpoch()) - 1e-9))
	}
	s.opt, err = optim.NewDPSGD(optim.DPSGDConfig{NoiseMultiplier: cfg.NoiseMultiplier, ClipNorm: cfg.ClipNorm,
		Schedule: optim.Constant{Rate: cfg.LearningRate}}, s.noise)
	if err != nil {
		return nil, fmt.Errorf("dptrain: %w", err)
	}
	s.run = accounting.Run{UpdateRule: s.opt.UpdateRule(), DatasetSize: n}
	s.live, err = accounting.NewLive(cfg.Accountants, func(name string) (accounting.Accountant, error) { return modes.New(name, s.run) })
	if err != nil {
		return nil, fmt.Errorf("dptrain: Config.Accountants: %w (the run releases every iterate: use composition accountants such as rdp, pld)", err)
	}
	if err := s.checkStopAccountant(); err != nil {
		return nil, err
	}
	return s, nil
}

// checkStopAccountant makes sure the stopping accountant accounts for the first planned step
// and is certified once it has (a paper or approximate ε must not govern stopping).
func (s *Session) checkStopAccountant() error {
	first, err := s.opt.DeclareStep(0, data.PlannedBatch(s.sampler, 0))
	if err != nil {
		return fmt.Errorf("dptrain: %w", err)
	}
	a, err := modes.New(s.cfg.StopAccountant, s.run)
	if err != nil {
		return fmt.Errorf("dptrain: Config.StopAccountant: %w", err)
	}
	for _, r := range first {
		if err := a.Compose(r); err != nil {
			return fmt.Errorf("dptrain: Config.StopAccountant %s cannot account for this run's steps: %w (choose another scheme or accountant)", s.cfg.StopAccountant, err)
		}
	}
	if a.Label() != accounting.Certified {
		return fmt.Errorf("dptrain: Config.StopAccountant %s gives a %s ε for this run, not a certified one: name a certified accountant (rdp or pld) in Config.StopAccountant", s.cfg.StopAccountant, a.Label())
	}
	return nil
}

// calibrate returns the smallest σ for which the stopping accountant's ε after the planned
// steps, as the optimizer declares them at σ = 1 (the session must have been built with
// σ = 1), is at most the target.
func (s *Session) calibrate(ctx context.Context) (float64, error) {
	if s.planned > maxPlannedSteps {
		return 0, fmt.Errorf("dptrain: Config.Steps/Epochs plan %d steps; calibrating σ replays every planned step and is refused above %d: plan fewer steps", s.planned, maxPlannedSteps)
	}
	var records []accounting.Step
	for k := range s.planned {
		recs, err := s.opt.DeclareStep(k, data.PlannedBatch(s.sampler, k))
		if err != nil {
			return 0, fmt.Errorf("dptrain: %w", err)
		}
		for _, r := range recs {
			records = accounting.AppendRecord(records, r)
		}
	}
	newAcct := func() (accounting.Accountant, error) { return modes.New(s.cfg.StopAccountant, s.run) }
	sigma, _, err := accounting.CalibrateRecordsContext(ctx, newAcct, records, s.cfg.TargetEpsilon, s.cfg.Delta)
	if err != nil {
		return 0, fmt.Errorf("dptrain: Config.TargetEpsilon: %w", err)
	}
	return sigma, nil
}

// Step draws the next batch from the session's sampler and takes one private step on it. It
// returns ErrPlanComplete once the planned steps have run and ErrBudgetExhausted, before
// touching the data, when the step would take the stopping accountant's ε above
// Config.TargetEpsilon. A step that has run is composed into every accountant even when an
// error is returned afterwards.
func (s *Session) Step() (StepResult, error) {
	if s.stopped {
		return StepResult{}, ErrBudgetExhausted
	}
	if s.opt.Steps() >= s.planned {
		return StepResult{}, ErrPlanComplete
	}
	idx, info := s.sampler.Next(s.idx[:0])
	s.idx = idx
	if s.cfg.TargetEpsilon > 0 {
		next, err := s.opt.Declare(info)
		if err != nil {
			return StepResult{}, fmt.Errorf("dptrain: %w", err)
		}
		over, err := s.live.WouldOvershootAll(next, s.cfg.TargetEpsilon, s.cfg.Delta, s.cfg.StopAccountant)
		if err != nil {
			return StepResult{}, fmt.Errorf("dptrain: %w", err)
		}
		if over {
			s.stopped = true
			return StepResult{}, ErrBudgetExhausted
		}
	}
	b := len(idx)
	if cap(s.by) < b {
		s.bx = make([]float32, b*s.d)
		s.by = make([]int32, b)
	}
	bx, by := s.bx[:b*s.d], s.by[:b]
	for i, j := range idx {
		copy(bx[i*s.d:(i+1)*s.d], s.x[j*s.d:(j+1)*s.d])
		by[i] = s.y[j]
	}
	res, err := s.opt.Step(s.model, optim.Batch{X: bx, Y: by, N: b, Index: idx}, info)
	if err != nil {
		return StepResult{}, fmt.Errorf("dptrain: step %d: %w", s.opt.Steps()+1, err)
	}
	for _, r := range res.Records {
		var refused *accounting.RefusedError
		if err := s.live.Compose(r); err != nil && !errors.As(err, &refused) {
			return StepResult{}, fmt.Errorf("dptrain: step %d: %w", s.opt.Steps(), err)
		}
	}
	return StepResult{Step: s.opt.Steps(), Batch: info, Records: res.Records, Stats: res.Stats}, nil
}

// Run calls Step until the plan is complete or the target ε is reached, calling each (when not
// nil) after every step; it returns nil when training stopped for either reason, and the
// first other error of Step, each or ctx.
func (s *Session) Run(ctx context.Context, each func(StepResult) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		r, err := s.Step()
		if errors.Is(err, ErrPlanComplete) || errors.Is(err, ErrBudgetExhausted) {
			return nil
		}
		if err != nil {
			return err
		}
		if each != nil {
			if err := each(r); err != nil {
				return err
			}
		}
	}
}

// Epsilon returns every accountant's guarantee at Config.Delta for the steps run so far, in
// the order of Config.Accountants.
func (s *Session) Epsilon() []Guarantee {
	gs, errs := s.live.Snapshot(s.cfg.Delta)
	out := make([]Guarantee, len(gs))
	for i := range gs {
		out[i] = Guarantee{Guarantee: gs[i], Err: errs[i]}
	}
	return out
}

// CertifiedEpsilon returns the stopping accountant's ε at Config.Delta for the steps run so
// far: the certified bound the target is held to.
func (s *Session) CertifiedEpsilon() (float64, error) {
	g, err := s.live.Epsilon(s.cfg.StopAccountant, s.cfg.Delta)
	return g.Epsilon, err
}

// Steps returns the number of steps run.
func (s *Session) Steps() int { return s.opt.Steps() }

// PlannedSteps returns the number of steps Config.Steps or Config.Epochs plans.
func (s *Session) PlannedSteps() int { return s.planned }

// NoiseMultiplier returns σ: Config.NoiseMultiplier, or the calibrated value.
func (s *Session) NoiseMultiplier() float64 { return s.cfg.NoiseMultiplier }

// SampleRate returns q, the sampler's declared rate.
func (s *Session) SampleRate() float64 { return s.sampler.SampleRate() }

// Private reports whether the session's randomness is secret: false when Config.Seed is set,
// in which case ε describes the mechanism but the run itself must not be released.
func (s *Session) Private() bool { return !s.noise.Reproducible() }

// Ledger returns the run-length ledger of every record composed so far.
func (s *Session) Ledger() []accounting.Step { return s.live.Ledger() }
