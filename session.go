package dptrain

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modes"
	"github.com/dptrain/dptrain/algorithm/dpsgd"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/ledger"
	"github.com/dptrain/dptrain/optim"
)

// ErrBudgetExhausted is returned by Session.Step, without running anything, when the next step
// would raise the stopping accountant's ε above Config.TargetEpsilon. Every later call returns
// it too: the session has stopped.
var ErrBudgetExhausted = errors.New("dptrain: the next step would exceed the target ε; the session has stopped")

// ErrPlanComplete is returned by Session.Step once the planned steps (Config.Steps or
// Config.Epochs) have all run.
var ErrPlanComplete = errors.New("dptrain: the planned steps have all run")

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
	// MakePrivateWithEpsilon; "" means the first certified one (rdp, then pld, then the order
	// of Accountants). It must be certified for this run: a paper or approximate bound (gdp,
	// modelmix) is refused.
	StopAccountant string
	// TargetEpsilon, when positive, is the ε the session never exceeds: Step refuses, before
	// running it, any step after which the stopping accountant's ε would exceed it.
	// MakePrivateWithEpsilon needs it.
	TargetEpsilon float64
	// Seed, when set, fixes the sampler's and the noise's streams: the run is reproducible
	// and NOT private (anyone who knows the seed knows the noise), and Private reports false.
	// nil (the default) seeds both from crypto/rand.
	Seed *uint64
	// Ledger is the directory of the ledger store that keeps the data's privacy ledger across
	// sessions (Privacy.Ledger); "" keeps none, and every Guarantee says so.
	Ledger string
}

// Guarantee is one accountant's (ε, δ) statement about the steps run so far, with its label
// (certified or paper or approximate), or the reason it cannot give one (Err).
type Guarantee struct {
	accounting.Guarantee
	// Store is the ledger store the guarantee counts every recorded step of (Privacy.Ledger).
	// "" means the session kept none: the guarantee counts the session's own steps and the
	// ledger of the checkpoint it restored, not the steps of other sessions on the same data.
	Store string
	Err   error
}

// String gives ε with its δ, accountant and label, and what it counts.
func (g Guarantee) String() string {
	if g.Err != nil {
		return fmt.Sprintf("%s: no guarantee: %v", g.Accountant, g.Err)
	}
	counts := "counts this session and the checkpoint it restored only (no ledger store)"
	if g.Store != "" {
		counts = "counts every step in ledger store " + g.Store
	}
	return fmt.Sprintf("ε = %.6g at δ = %g (%s, %s; %s)", g.Epsilon, g.Delta, g.Accountant, g.Label, counts)
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
	Stats data.Stats
	// StepSize is the learning rate the step used.
	StepSize float64
}

// Session is a private training loop run by a Plan: each Step draws the next batch from the
// plan's own sampler, gathers it from the plan's data, takes one step of the plan's optimizer
// and composes what the step released into the plan's accountants before returning, stopping
// before any step that would take the stopping accountant's ε above the target. Nothing a
// step's records declare comes from the caller.
//
// The session checks before every step that the optimizer and the sampler have not moved
// without it (steps taken on the optimizer, or batches drawn from the sampler, outside the
// session), and stops for good, with a *LedgerError, when they have or when a step that ran
// could not be put on record.
//
// A Session is not safe for concurrent use.
type Session struct {
	plan     *Plan
	model    optim.GradientOracle
	data     *data.Split
	sampler  *data.Sampler
	opt      optim.Optimizer
	live     *accounting.Live
	released func(step int, records []accounting.Step) error
	agree    func(stop bool) (bool, error)
	// streams names the random streams whose positions a seeded session's Checkpoint carries.
	streams map[string]*optim.Noise
	// store is the ledger store (Privacy.Ledger), nil when the session keeps none; void
	// holds, by accountant, why a hidden-state bound no longer applies (the store holds steps
	// of trajectories this session does not continue).
	store *ledger.Store
	void  map[string]string

	// optBase and samplerBase are the optimizer's steps and the sampler's draws when the
	// session began (or was restored); composed counts the steps the session has run and
	// composed since.
	optBase, samplerBase, composed int
	stopped                        bool
	// err, once set, ends the session: every later Step returns it.
	err error

	idx []int
	bx  []float32
	by  []int32
}

// StepError is the error of a Step that failed after the plan and the target let it begin:
// Step is the number the step would have had (Steps()+1). The session has stopped: every later
// Step returns the same error.
type StepError struct {
	Step int
	Err  error
}

func (e *StepError) Error() string { return fmt.Sprintf("dptrain: step %d: %v", e.Step, e.Err) }

// Unwrap returns the underlying error (optim.ErrNotFinite, for instance).
func (e *StepError) Unwrap() error { return e.Err }

// NewSession builds the plan of p (NewPlan) and the session that runs it on p.Model.
func NewSession(p Parts) (*Session, error) {
	pl, err := NewPlan(context.Background(), p)
	if err != nil {
		return nil, err
	}
	return pl.NewSession(p.Model)
}

// NewSession returns the session that runs the plan on model (trained in place), which must
// take the plan's examples. A plan runs one session. An optimizer that draws its own initial
// iterate (optim.Initializer, DP-SGLD) is initialised here, unless it already has been (a
// restored checkpoint).
func (pl *Plan) NewSession(model optim.GradientOracle) (*Session, error) {
	if pl.used {
		return nil, errPlanUsed
	}
	if model == nil {
		return nil, &ConfigError{Key: pl.names.k("Model"), Reason: "is nil", Fix: "pass a models.Network or your own optim.GradientOracle"}
	}
	if m, ok := model.(interface{ InputShape() []int }); ok {
		want := 1
		for _, v := range m.InputShape() {
			want *= v
		}
		if d := pl.data.Dim(); want != d {
			return nil, &ConfigError{Key: pl.names.k("Model"), Reason: fmt.Sprintf("takes %d features per example, the data have %d", want, d), Fix: "choose a model for these data"}
		}
	}
	pl.used = true
	if in, ok := pl.opt.(optim.Initializer); ok && !in.Initialized() {
		in.Init(model.Params())
	}
	s := &Session{plan: pl, model: model, data: pl.data, sampler: pl.sampler, opt: pl.opt, live: pl.live,
		released: pl.parts.Released, agree: pl.parts.Agree,
		streams: map[string]*optim.Noise{"noise": pl.streams.root, "sampler": pl.samplerNoise}}
	s.rebase()
	if err := s.openStore(); err != nil {
		return nil, err
	}
	return s, nil
}

// rebase makes the optimizer's and the sampler's current positions the session's start.
func (s *Session) rebase() {
	s.optBase, s.samplerBase, s.composed = s.opt.Steps(), s.sampler.Drawn(), 0
}

// MakePrivate returns a Session that trains model with DP-SGD on the n examples of x (n rows
// of d = len(x)/n features, row-major) and their labels y, as cfg says. Each call to Step takes
// one private step on model's parameters in place. x and y must not change while the session
// runs. A refused setting is a *ConfigError naming the Config field.
func MakePrivate(model optim.GradientOracle, x []float32, y []int32, cfg Config) (*Session, error) {
	if !(cfg.NoiseMultiplier > 0) || math.IsInf(cfg.NoiseMultiplier, 0) {
		return nil, &ConfigError{Key: "Config.NoiseMultiplier", Value: cfg.NoiseMultiplier, Reason: "must be a positive finite number",
			Fix: "set σ (around 1 is common), or call MakePrivateWithEpsilon to calibrate it for a target ε"}
	}
	return newSession(model, x, y, cfg, false)
}

// MakePrivateWithEpsilon is MakePrivate with σ calibrated: the smallest noise multiplier (to a
// relative tolerance of 1e-4, accounting.CalibrateRecords) for which the stopping accountant's
// ε after all planned steps is at most cfg.TargetEpsilon. Config.NoiseMultiplier must be 0.
// The session then also stops before any step that would exceed the target, so the calibration
// can only end training early, never overshoot.
func MakePrivateWithEpsilon(model optim.GradientOracle, x []float32, y []int32, cfg Config) (*Session, error) {
	if cfg.NoiseMultiplier != 0 {
		return nil, &ConfigError{Key: "Config.NoiseMultiplier", Value: cfg.NoiseMultiplier, Reason: "is set and MakePrivateWithEpsilon calibrates σ",
			Fix: "leave it 0, or call MakePrivate to use it"}
	}
	if !(cfg.TargetEpsilon > 0) || math.IsInf(cfg.TargetEpsilon, 0) {
		return nil, &ConfigError{Key: "Config.TargetEpsilon", Value: cfg.TargetEpsilon, Reason: "must be a positive finite number",
			Fix: "MakePrivateWithEpsilon calibrates σ for it"}
	}
	return newSession(model, x, y, cfg, true)
}

// configNames are the names of Config's fields in a plan's messages; the opt-ins Config does
// not have are not offered.
var configNames = map[string]string{
	"Data": "the dataset (x, y)", "Model": "the model", "Optimizer": "DP-SGD",
	"Sampling": "Config.Sampling", "BatchSize": "Config.BatchSize", "MinBatchSize": "Config.BatchSize",
	"Steps": "Config.Steps", "Epochs": "Config.Epochs", "NoiseMultiplier": "Config.NoiseMultiplier",
	"CalibrateNoise": "MakePrivateWithEpsilon", "Seed": "Config.Seed", "Streams": "Config.Seed",
	"Privacy.Delta": "Config.Delta", "Privacy.Accountants": "Config.Accountants",
	"Privacy.StopAccountant": "Config.StopAccountant", "Privacy.TargetEpsilon": "Config.TargetEpsilon",
	"Privacy.Ledger": "Config.Ledger", "Privacy.AllowLargeDelta": "", "Privacy.StopOnUncertifiedBound": "", "Privacy.AllowNoGuarantee": "",
}

// newSession checks cfg and builds the DP-SGD plan and session it describes.
func newSession(model optim.GradientOracle, x []float32, y []int32, cfg Config, calibrate bool) (*Session, error) {
	bad := func(key string, value any, reason, fix string) error {
		return &ConfigError{Key: key, Value: value, Reason: reason, Fix: fix}
	}
	if model == nil {
		return nil, bad("the model", nil, "is nil", "pass a models.Network or your own optim.GradientOracle")
	}
	n := len(y)
	if n == 0 {
		return nil, bad("the dataset", 0, "is empty", "pass one label per example in y")
	}
	if len(x) == 0 || len(x)%n != 0 {
		return nil, bad("the dataset", len(x), fmt.Sprintf("has %d feature values, which do not split into %d examples", len(x), n), "x holds n rows of d features, row-major (len(x) = n·d)")
	}
	if cfg.Sampling == "" {
		cfg.Sampling = data.SchemePoisson
	}
	if cfg.Sampling == data.SchemePoissonWithRejection {
		return nil, bad("Config.Sampling", cfg.Sampling, "is DP-ULR's scheme, which DP-SGD's record does not describe", fmt.Sprintf("use %q", data.SchemePoisson))
	}
	if cfg.BatchSize <= 0 || cfg.BatchSize > n {
		return nil, bad("Config.BatchSize", cfg.BatchSize, fmt.Sprintf("must be between 1 and the %d examples", n), "")
	}
	if !(cfg.ClipNorm > 0) || math.IsInf(cfg.ClipNorm, 0) {
		return nil, bad("Config.ClipNorm", cfg.ClipNorm, "must be a positive finite number", "it bounds each example's gradient (the sensitivity); 1 is a common start")
	}
	if !(cfg.LearningRate > 0) || math.IsInf(cfg.LearningRate, 0) {
		return nil, bad("Config.LearningRate", cfg.LearningRate, "must be a positive finite number", "")
	}
	mech := Mechanism{New: func(sigma float64, noise *optim.Noise) (optim.Optimizer, error) {
		return dpsgd.New(dpsgd.Config{NoiseMultiplier: sigma, ClipNorm: cfg.ClipNorm, Schedule: optim.Constant{Rate: cfg.LearningRate}}, noise)
	}}
	p := Parts{Model: model, Data: &data.Split{X: x, Y: y, N: n, D: len(x) / n}, Sampling: cfg.Sampling, BatchSize: cfg.BatchSize,
		Steps: cfg.Steps, Epochs: cfg.Epochs, Optimizer: mech, NoiseMultiplier: cfg.NoiseMultiplier, CalibrateNoise: calibrate,
		Privacy: Privacy{Delta: cfg.Delta, Accountants: cfg.Accountants, StopAccountant: cfg.StopAccountant, TargetEpsilon: cfg.TargetEpsilon,
			Ledger: cfg.Ledger},
		Seed: cfg.Seed}
	pl, err := newPlan(context.Background(), p, names{m: configNames, prefix: "Config."})
	if err != nil {
		return nil, err
	}
	return pl.NewSession(model)
}

// Step draws the next batch from the session's sampler and takes one private step on it. It
// returns ErrPlanComplete once the planned steps have run and ErrBudgetExhausted, before
// touching the data, when the step would take the stopping accountant's ε above the target.
// A step that ran is composed into every accountant (and passed to Parts.Released) before
// Step returns; if that fails the session stops with a *LedgerError. A step that fails in the
// optimizer is a *StepError wrapping the cause (errors.Is finds optim.ErrNotFinite), and stops
// the session too. Every later Step returns the error that stopped it.
func (s *Session) Step() (StepResult, error) {
	if s.err != nil {
		return StepResult{}, s.err
	}
	if s.stopped {
		return StepResult{}, ErrBudgetExhausted
	}
	next := s.composed + 1
	if got, want := s.opt.Steps(), s.optBase+s.composed; got != want {
		return StepResult{}, s.halt(&LedgerError{Step: next, Composed: s.composed, OptimizerSteps: got, SamplerDraws: s.sampler.Drawn(),
			Reason: fmt.Sprintf("the optimizer counts %d steps, the session ran %d of them: %d steps were taken on the optimizer outside the session and are on no ledger", got-s.optBase, s.composed, got-want)})
	}
	if got, want := s.sampler.Drawn(), s.samplerBase+s.composed; got != want {
		return StepResult{}, s.halt(&LedgerError{Step: next, Composed: s.composed, OptimizerSteps: s.opt.Steps(), SamplerDraws: got,
			Reason: fmt.Sprintf("the sampler has drawn %d batches, the session %d: batches were drawn (or its position restored) outside the session", got-s.samplerBase, s.composed)})
	}
	if s.opt.Steps() >= s.plan.planned {
		return StepResult{}, ErrPlanComplete
	}
	step := s.opt.Steps() + 1
	fail := func(err error) (StepResult, error) { return StepResult{}, s.halt(&StepError{Step: step, Err: err}) }
	over := false
	if s.live != nil && s.plan.parts.Privacy.TargetEpsilon > 0 {
		// What the step will release, declared from the batch the sampler will draw, before
		// anything is drawn.
		recs, err := s.opt.(optim.Declarer).Declare(s.sampler.Planned(s.sampler.Drawn()))
		if err != nil {
			return fail(err)
		}
		if over, err = s.live.WouldOvershootAll(recs, s.plan.parts.Privacy.TargetEpsilon, s.plan.delta, s.plan.stop); err != nil {
			return fail(err)
		}
	}
	if s.agree != nil {
		group, err := s.agree(over)
		if err != nil {
			return fail(err)
		}
		over = over || group
	}
	if over {
		s.stopped = true
		return StepResult{}, ErrBudgetExhausted
	}
	idx, info := s.sampler.Next(s.idx[:0])
	s.idx = idx
	b, d := len(idx), s.data.Dim()
	if cap(s.by) < b {
		// A Poisson batch fluctuates around its mean: leave room for the next ones.
		c := b + b/4 + 16
		s.bx = make([]float32, c*d)
		s.by = make([]int32, c)
	}
	bx, by := s.bx[:b*d], s.by[:b]
	if err := s.data.Gather(idx, bx, by); err != nil {
		return fail(err)
	}
	res, err := s.opt.Step(s.model, data.Batch{X: bx, Y: by, N: b, Index: idx}, info)
	if err != nil {
		return fail(err)
	}
	// The step ran on the data: it goes on record before its result is used.
	s.composed++
	if got := s.opt.Steps(); got != step {
		return StepResult{}, s.halt(&LedgerError{Step: step, Composed: s.composed, OptimizerSteps: got, SamplerDraws: s.sampler.Drawn(),
			Reason: fmt.Sprintf("the optimizer counted %d steps for one step of the session", got-step+1)})
	}
	var errs []error
	if s.store != nil {
		if err := s.store.Append(step, res.Records); err != nil {
			errs = append(errs, fmt.Errorf("writing it to the ledger store: %w", err))
		}
	}
	if s.released != nil {
		if err := s.released(step, res.Records); err != nil {
			errs = append(errs, fmt.Errorf("recording it: %w", err))
		}
	}
	if s.live != nil {
		for _, r := range res.Records {
			var refused *accounting.RefusedError
			if err := s.live.Compose(r); err != nil && !errors.As(err, &refused) {
				errs = append(errs, fmt.Errorf("composing it: %w", err))
			}
		}
	}
	if len(errs) > 0 {
		return StepResult{}, s.halt(&LedgerError{Step: step, Composed: s.composed, OptimizerSteps: s.opt.Steps(), SamplerDraws: s.sampler.Drawn(),
			Reason: "the step ran on the data and could not be put on record", Err: errors.Join(errs...)})
	}
	return StepResult{Step: step, Batch: info, Records: res.Records, Stats: res.Stats, StepSize: res.StepSize}, nil
}

// halt stops the session with err, which every later Step returns.
func (s *Session) halt(err error) error {
	s.err = err
	return err
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

// Epsilon returns every accountant's guarantee at the plan's δ for the steps run so far, in
// the accountants' order; nil for a non-private session.
func (s *Session) Epsilon() []Guarantee {
	if s.live == nil {
		return nil
	}
	gs, errs := s.live.Snapshot(s.plan.delta)
	out := make([]Guarantee, len(gs))
	var store string
	if s.store != nil {
		store = s.plan.parts.Privacy.Ledger
	}
	for i := range gs {
		out[i] = s.voided(Guarantee{Guarantee: gs[i], Store: store, Err: errs[i]})
	}
	return out
}

// CertifiedEpsilon returns the certified ε at the plan's δ for the steps run so far (Certified).
func (s *Session) CertifiedEpsilon() (float64, error) {
	g, err := s.Certified()
	if err != nil {
		return math.NaN(), err
	}
	return g.Epsilon, nil
}

// Certified returns a certified guarantee at the plan's δ for the steps run so far: the
// stopping accountant's when it is certified, else the first certified configured
// accountant's, else one computed from the ledger by rdp or pld where either covers the run.
// It never returns a paper or approximate bound: when none covers the run it is an error.
func (s *Session) Certified() (accounting.Guarantee, error) {
	if s.live == nil {
		return accounting.Guarantee{}, errors.New("dptrain: the session has no accountants (a non-private baseline)")
	}
	pl := s.plan
	for _, name := range []string{pl.stop, pl.certified} {
		if name == "" || pl.labels[name] != accounting.Certified || s.void[name] != "" {
			continue
		}
		g, err := s.live.Epsilon(name, pl.delta)
		if err != nil {
			return g, err
		}
		if g.Label == accounting.Certified {
			return g, nil
		}
	}
	ledger := s.live.Ledger()
	for _, name := range stopPreference {
		a, err := modes.New(name, pl.run)
		for _, r := range ledger {
			if err == nil {
				err = a.Compose(r)
			}
		}
		if err != nil {
			continue
		}
		if g, err := a.Epsilon(pl.delta); err == nil && g.Label == accounting.Certified {
			return g, nil
		}
	}
	return accounting.Guarantee{}, fmt.Errorf("dptrain: no certified accountant covers this run (%s): its ε is not bounded by any certified theorem", pl.explain())
}

// Steps returns the number of steps the optimizer has taken (those of a restored checkpoint
// included).
func (s *Session) Steps() int { return s.opt.Steps() }

// PlannedSteps returns the number of steps the plan runs unless the target stops it first.
func (s *Session) PlannedSteps() int { return s.plan.planned }

// NoiseMultiplier returns σ in use: the one given, or the calibrated one.
func (s *Session) NoiseMultiplier() float64 { return s.plan.sigma }

// SampleRate returns q, the sampler's rate (b/n).
func (s *Session) SampleRate() float64 { return s.sampler.SampleRate() }

// Private reports whether the session's randomness is unpredictable and its steps accounted
// for: false when its streams are seeded (Config.Seed, Parts.Seed), in which case ε describes
// the mechanism but the run itself must not be released, and for a non-private baseline.
func (s *Session) Private() bool { return s.plan.Private() }

// Plan returns the plan the session runs.
func (s *Session) Plan() *Plan { return s.plan }

// Ledger returns the run-length ledger of every record composed so far.
func (s *Session) Ledger() []accounting.Step {
	if s.live == nil {
		return nil
	}
	return s.live.Ledger()
}
