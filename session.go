package dptrain

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modes"
	"github.com/dptrain/dptrain/algorithm/dpsgd"
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
	// StepSize is the learning rate the step used.
	StepSize float64
}

// Session is a private training loop that owns its sampler, its optimizer, its live
// accountants and the rule that stops before the target ε is exceeded: each Step draws the
// next batch from the session's own sampler, so its records always declare the scheme that
// really drew the batch. MakePrivate and MakePrivateWithEpsilon build a DP-SGD session over
// in-memory data; NewSession assembles one from any optimizer, sampler and dataset (the
// YAML trainer in package train runs every algorithm through it).
//
// A Session is not safe for concurrent use.
type Session struct {
	cfg     Config
	model   optim.GradientOracle
	src     Source
	sampler *data.Sampler
	opt     optim.Optimizer
	live    *accounting.Live
	stop    StopRule
	planned int
	stopped bool
	// released is Parts.Released; streams are the seeded random streams a checkpoint carries.
	released func(step int, records []accounting.Step) error
	agree    func(stop bool) (bool, error)
	streams  map[string]*optim.Noise
	private  bool

	idx []int
	bx  []float32
	by  []int32
}

// StepError is the error of a Step that failed after the plan and the target let it begin:
// Step is the number the step would have had (Steps()+1), or had if it ran.
type StepError struct {
	Step int
	Err  error
}

func (e *StepError) Error() string { return fmt.Sprintf("dptrain: step %d: %v", e.Step, e.Err) }

// Unwrap returns the underlying error (optim.ErrNotFinite, for instance).
func (e *StepError) Unwrap() error { return e.Err }

// Source is the training data a Session draws its batches from: Len examples, each of Dim
// features, copied into a batch's buffers by Gather (x has room for len(idx)·Dim values).
// *data.Split implements it.
type Source interface {
	Len() int
	Dim() int
	Gather(idx []int, x []float32, y []int32) error
}

// StopRule is the privacy target a Session holds: Step refuses, before running it, any step
// after which Accountant's ε at Delta would exceed TargetEpsilon. A zero TargetEpsilon sets no
// target (the accountants still report ε at Delta).
type StopRule struct {
	Accountant    string
	TargetEpsilon float64
	Delta         float64
}

// Parts are the pieces NewSession couples into a private loop. The optimizer declares what
// each step releases, the sampler declares how it drew each batch (only a data.Sampler can
// make a data.BatchInfo), and the accountants interpret those records: no part can speak for
// another.
type Parts struct {
	// Model is trained in place; Data is the training set, over which Sampler draws batches
	// (Sampler.DatasetSize() must equal Data.Len()).
	Model   optim.GradientOracle
	Data    Source
	Sampler *data.Sampler
	// Optimizer takes the private steps. With a target it must be an optim.Declarer, so
	// that the next step's records are known before the step runs.
	Optimizer optim.Optimizer
	// Accountants compose every record the optimizer releases; nil only for a non-private
	// baseline (then Stop must be zero).
	Accountants *accounting.Live
	Stop        StopRule
	// PlannedSteps is the number of steps Run takes unless the target stops it first.
	PlannedSteps int
	// Released, when set, is called with each step's records after the step ran on the
	// data and before they are composed (a run's ledger is written here, so that a step
	// that ran is on record whatever happens next).
	Released func(step int, records []accounting.Step) error
	// Agree, when set, is called before every step with this process's stop decision (the
	// stop rule's; false without a target) and returns the decision to follow: in a
	// data-parallel run, rank 0's, which every rank must follow at the same step.
	Agree func(stop bool) (bool, error)
	// Streams names the random streams (the noise's, the sampler's) whose positions a
	// seeded session's Checkpoint carries. A session is private only when none of them is
	// seeded (optim.Noise.Reproducible).
	Streams map[string]*optim.Noise
}

// NewSession checks p and returns the session that runs it.
func NewSession(p Parts) (*Session, error) {
	switch {
	case p.Model == nil:
		return nil, errors.New("dptrain: Parts.Model is nil: pass a models.Network or your own optim.GradientOracle")
	case p.Data == nil || p.Data.Len() == 0:
		return nil, errors.New("dptrain: Parts.Data holds no examples")
	case p.Sampler == nil:
		return nil, errors.New("dptrain: Parts.Sampler is nil: build one with data.NewSampler over Parts.Data.Len() examples")
	case p.Optimizer == nil:
		return nil, errors.New("dptrain: Parts.Optimizer is nil")
	case p.PlannedSteps < 0:
		return nil, fmt.Errorf("dptrain: Parts.PlannedSteps %d is negative", p.PlannedSteps)
	}
	if n, m := p.Sampler.DatasetSize(), p.Data.Len(); n != m {
		return nil, fmt.Errorf("dptrain: the sampler draws from %d examples, Parts.Data holds %d: build the sampler over Parts.Data.Len() examples (its records declare n, which the accountants use)", n, m)
	}
	if st := p.Stop; st.TargetEpsilon != 0 || st.Accountant != "" {
		if !(st.TargetEpsilon > 0) || math.IsInf(st.TargetEpsilon, 0) {
			return nil, fmt.Errorf("dptrain: StopRule.TargetEpsilon %v must be a positive finite number (0: no target)", st.TargetEpsilon)
		}
		if !(st.Delta > 0 && st.Delta < 1) {
			return nil, fmt.Errorf("dptrain: StopRule.Delta %v must be in (0, 1)", st.Delta)
		}
		if p.Accountants == nil || !slices.Contains(p.Accountants.Names(), st.Accountant) {
			return nil, fmt.Errorf("dptrain: StopRule.Accountant %q is not among the session's accountants: add it to Parts.Accountants", st.Accountant)
		}
		if _, ok := p.Optimizer.(optim.Declarer); !ok {
			return nil, fmt.Errorf("dptrain: optimizer %T cannot declare its next step, so the privacy target cannot be enforced: implement optim.Declarer or set no target", p.Optimizer)
		}
	}
	private := p.Accountants != nil
	for _, n := range p.Streams {
		private = private && !n.Reproducible()
	}
	return &Session{model: p.Model, src: p.Data, sampler: p.Sampler, opt: p.Optimizer, live: p.Accountants,
		stop: p.Stop, planned: p.PlannedSteps, released: p.Released, agree: p.Agree, streams: p.Streams, private: private}, nil
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

	var noise *optim.Noise
	if cfg.Seed != nil {
		noise = optim.NewSeededNoise(*cfg.Seed)
	} else {
		var err error
		if noise, err = optim.NewNoise(); err != nil {
			return nil, fmt.Errorf("dptrain: %w", err)
		}
	}
	// The sampler draws from its own stream, never the noise's.
	samplerNoise := noise.Split()
	sampler, err := data.NewSampler(cfg.Sampling, n, cfg.BatchSize, 0, samplerNoise.Rand())
	if err != nil {
		return nil, fmt.Errorf("dptrain: Config.Sampling, Config.BatchSize: %w", err)
	}
	planned := cfg.Steps
	if cfg.Steps == 0 && cfg.Sampling == data.SchemePoisson {
		planned = int(math.Ceil(cfg.Epochs/sampler.SampleRate() - 1e-9))
	} else if cfg.Steps == 0 {
		planned = int(math.Ceil(cfg.Epochs*float64(sampler.StepsPerEpoch()) - 1e-9))
	}
	opt, err := dpsgd.New(dpsgd.Config{NoiseMultiplier: cfg.NoiseMultiplier, ClipNorm: cfg.ClipNorm,
		Schedule: optim.Constant{Rate: cfg.LearningRate}}, noise)
	if err != nil {
		return nil, fmt.Errorf("dptrain: %w", err)
	}
	run := accounting.Run{UpdateRule: opt.UpdateRule(), DatasetSize: n}
	live, err := accounting.NewLive(cfg.Accountants, func(name string) (accounting.Accountant, error) { return modes.New(name, run) })
	if err != nil {
		return nil, fmt.Errorf("dptrain: Config.Accountants: %w (the run releases every iterate: use composition accountants such as rdp, pld)", err)
	}
	s, err := NewSession(Parts{Model: model, Data: &data.Split{X: x, Y: y, N: n, D: d}, Sampler: sampler, Optimizer: opt,
		Accountants: live, PlannedSteps: planned, Streams: map[string]*optim.Noise{"noise": noise, "sampler": samplerNoise}})
	if err != nil {
		return nil, err
	}
	s.cfg = cfg
	if cfg.TargetEpsilon > 0 {
		s.stop = StopRule{Accountant: cfg.StopAccountant, TargetEpsilon: cfg.TargetEpsilon, Delta: cfg.Delta}
	}
	if err := s.checkStopAccountant(run); err != nil {
		return nil, err
	}
	return s, nil
}

// checkStopAccountant makes sure the stopping accountant accounts for the first planned step
// and is certified once it has (a paper or approximate ε must not govern stopping).
func (s *Session) checkStopAccountant(run accounting.Run) error {
	first, err := s.declarer().DeclareStep(0, data.PlannedBatch(s.sampler, 0))
	if err != nil {
		return fmt.Errorf("dptrain: %w", err)
	}
	a, err := modes.New(s.cfg.StopAccountant, run)
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

// declarer is the session's optimizer as the StepDeclarer MakePrivate's DP-SGD is.
func (s *Session) declarer() optim.StepDeclarer { return s.opt.(optim.StepDeclarer) }

// calibrate returns the smallest σ for which the stopping accountant's ε after the planned
// steps, as the optimizer declares them at σ = 1 (the session must have been built with
// σ = 1), is at most the target.
func (s *Session) calibrate(ctx context.Context) (float64, error) {
	if s.planned > maxPlannedSteps {
		return 0, fmt.Errorf("dptrain: Config.Steps/Epochs plan %d steps; calibrating σ replays every planned step and is refused above %d: plan fewer steps", s.planned, maxPlannedSteps)
	}
	var records []accounting.Step
	for k := range s.planned {
		recs, err := s.declarer().DeclareStep(k, data.PlannedBatch(s.sampler, k))
		if err != nil {
			return 0, fmt.Errorf("dptrain: %w", err)
		}
		for _, r := range recs {
			records = accounting.AppendRecord(records, r)
		}
	}
	run := accounting.Run{UpdateRule: s.opt.UpdateRule(), DatasetSize: s.src.Len()}
	newAcct := func() (accounting.Accountant, error) { return modes.New(s.cfg.StopAccountant, run) }
	sigma, _, err := accounting.CalibrateRecordsContext(ctx, newAcct, records, s.cfg.TargetEpsilon, s.cfg.Delta)
	if err != nil {
		return 0, fmt.Errorf("dptrain: Config.TargetEpsilon: %w", err)
	}
	return sigma, nil
}

// Step draws the next batch from the session's sampler and takes one private step on it. It
// returns ErrPlanComplete once the planned steps have run and ErrBudgetExhausted, before
// touching the data, when the step would take the stopping accountant's ε above the target.
// A step that has run is composed into every accountant (after Parts.Released has seen its
// records) even when an error is returned afterwards. Any other error is a *StepError
// wrapping the cause (errors.Is finds optim.ErrNotFinite).
func (s *Session) Step() (StepResult, error) {
	if s.stopped {
		return StepResult{}, ErrBudgetExhausted
	}
	if s.opt.Steps() >= s.planned {
		return StepResult{}, ErrPlanComplete
	}
	idx, info := s.sampler.Next(s.idx[:0])
	s.idx = idx
	fail := func(step int, err error) (StepResult, error) { return StepResult{}, &StepError{Step: step, Err: err} }
	over := false
	if st := s.stop; st.TargetEpsilon > 0 {
		next, err := s.opt.(optim.Declarer).Declare(info)
		if err != nil {
			return fail(s.opt.Steps()+1, err)
		}
		if over, err = s.live.WouldOvershootAll(next, st.TargetEpsilon, st.Delta, st.Accountant); err != nil {
			return fail(s.opt.Steps()+1, err)
		}
	}
	if s.agree != nil {
		var err error
		if over, err = s.agree(over); err != nil {
			return fail(s.opt.Steps()+1, err)
		}
	}
	if over {
		s.stopped = true
		return StepResult{}, ErrBudgetExhausted
	}
	b, d := len(idx), s.src.Dim()
	if cap(s.by) < b {
		// A Poisson batch fluctuates around its mean: leave room for the next ones.
		c := b + b/4 + 16
		s.bx = make([]float32, c*d)
		s.by = make([]int32, c)
	}
	bx, by := s.bx[:b*d], s.by[:b]
	if err := s.src.Gather(idx, bx, by); err != nil {
		return fail(s.opt.Steps()+1, err)
	}
	res, err := s.opt.Step(s.model, optim.Batch{X: bx, Y: by, N: b, Index: idx}, info)
	if err != nil {
		return fail(s.opt.Steps()+1, err)
	}
	step := s.opt.Steps()
	if s.released != nil {
		if err := s.released(step, res.Records); err != nil {
			return fail(step, err)
		}
	}
	if s.live != nil {
		for _, r := range res.Records {
			var refused *accounting.RefusedError
			if err := s.live.Compose(r); err != nil && !errors.As(err, &refused) {
				return fail(step, err)
			}
		}
	}
	return StepResult{Step: step, Batch: info, Records: res.Records, Stats: res.Stats, StepSize: res.StepSize}, nil
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

// Epsilon returns every accountant's guarantee at the stop rule's δ (Config.Delta) for the
// steps run so far, in the accountants' order; nil for a non-private session.
func (s *Session) Epsilon() []Guarantee {
	if s.live == nil {
		return nil
	}
	gs, errs := s.live.Snapshot(s.delta())
	out := make([]Guarantee, len(gs))
	for i := range gs {
		out[i] = Guarantee{Guarantee: gs[i], Err: errs[i]}
	}
	return out
}

// delta is the δ ε is reported at.
func (s *Session) delta() float64 {
	if s.stop.Delta > 0 {
		return s.stop.Delta
	}
	return s.cfg.Delta
}

// CertifiedEpsilon returns the stopping accountant's ε at Config.Delta for the steps run so
// far: the certified bound the target is held to.
func (s *Session) CertifiedEpsilon() (float64, error) {
	name := s.stop.Accountant
	if name == "" {
		name = s.cfg.StopAccountant
	}
	if s.live == nil || name == "" {
		return math.NaN(), errors.New("dptrain: the session has no stopping accountant")
	}
	g, err := s.live.Epsilon(name, s.delta())
	return g.Epsilon, err
}

// Steps returns the number of steps run.
func (s *Session) Steps() int { return s.opt.Steps() }

// PlannedSteps returns the number of steps Config.Steps or Config.Epochs plans.
func (s *Session) PlannedSteps() int { return s.planned }

// NoiseMultiplier returns σ: Config.NoiseMultiplier, or the calibrated value.
func (s *Session) NoiseMultiplier() float64 { return s.cfg.NoiseMultiplier }

// SampleRate returns q, the sampler's rate (b/n).
func (s *Session) SampleRate() float64 { return s.sampler.SampleRate() }

// Private reports whether the session's randomness is unpredictable: false when a stream is
// seeded (Config.Seed), in which case ε describes the mechanism but the run itself must not be
// released, and for a session without accountants.
func (s *Session) Private() bool { return s.private }

// Ledger returns the run-length ledger of every record composed so far.
func (s *Session) Ledger() []accounting.Step {
	if s.live == nil {
		return nil
	}
	return s.live.Ledger()
}
