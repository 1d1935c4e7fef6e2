package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dptrain/dptrain/algorithm"
	"github.com/dptrain/dptrain/comm"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/rundir"

	"github.com/dptrain/dptrain"
	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/ulr"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/planparts"
	"github.com/dptrain/dptrain/ledger"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
	"github.com/dptrain/dptrain/optim"
)

// Options are the run-time settings of a training run that are not part of its config.
type Options struct {
	// Log receives progress and warnings; nil discards them.
	Log Logger
	// Progress receives the progress bar; nil draws none. Terminal redraws it in place.
	Progress io.Writer
	Terminal bool
	// ProgressWidth returns the terminal's width in columns, which the progress line fits; it
	// is asked at every redraw, so a resized terminal is followed (nil or 0: no limit).
	ProgressWidth func() int
	// Resume continues from the checkpoint in the output directory.
	Resume bool
	// ResumeFrom, when set with Resume, names the checkpoint file to continue from instead of
	// the output directory's newest (e.g. an older one kept by training.keep_checkpoints).
	ResumeFrom string
	// AllowChanges lets a resumed run change keys that do not affect the privacy accounting
	// (see config.Resumable); the changes are logged and listed in the summary.
	AllowChanges bool
	// Hooks run after the built-in ones, after every step.
	Hooks []Hook
	// Algorithms is the registry optimizer.algorithm is looked up in; nil means config.Builtin().
	// A config parsed with another registry's ParseConfig needs that registry here too.
	Algorithms *config.Algorithms
	// TrainSplit, when set, replaces the training split after preprocessing and before the
	// sampler is built, so that n is the new split's size. An audit (train/audit) adds its
	// input-space canaries here: they are then sampled, clipped and noised like any example.
	TrainSplit func(*data.Split) (*data.Split, error)
	// Dataset, when set, is trained on instead of data.dataset (which then only names it in
	// the summary): a caller's own examples, in memory. It goes through the configured
	// preprocessing (data.normalize, subsets, features, data.feature_norm) as a dataset
	// read from disk does; the caller's copy is not modified. Its size n is public, as for
	// every dataset (the accountants assume it).
	Dataset *data.Dataset
	// Model, when set, is trained instead of the network the model section describes (a
	// caller's own architecture). Its input must match the dataset's examples; it is
	// trained in place, and a resumed run must pass the same architecture.
	Model *models.Network
	// Comm, when it has several ranks, trains data-parallel: this process is one rank of the
	// group (an MPI job started by mpirun or srun, which the command joins, or any comm.Comm), every rank runs New and Run with the same
	// config, rank 0 owns the run directory and reports, and Run returns a nil Summary on the
	// other ranks, which log warnings only and draw no progress bar. Nil or one rank: a
	// single process.
	Comm comm.Comm
	// Oracle, when set, wraps the model as the optimizer sees it. An audit injects its
	// gradient canaries here, inside the private step, so that they are clipped with the
	// batch and noised with it.
	Oracle func(optim.GradientOracle) optim.GradientOracle
}

// Trainer is one configured training run.
type Trainer struct {
	cfg   *config.Config
	opts  Options
	log   Logger
	ds    *data.Dataset
	train *data.Split
	test  *data.Split

	model *models.Network
	algs  *config.Algorithms
	plan  algorithm.Plan
	// streams are the run's random streams; dp is the private run the library's plan built
	// from the config: the sampler, the noise, the optimizer, the accountants and the stop
	// rule. opt, noise, samplerNoise, sampler and live are its pieces, which checkpoints
	// restore in place.
	streams *dptrain.Streams
	dp      *dptrain.Plan
	opt     optim.Optimizer
	noise   *optim.Noise
	// samplerNoise is the sampler's own stream, split from noise.
	samplerNoise *optim.Noise
	// minBatch is the rejection threshold N_B of poisson-with-rejection sampling (0 otherwise).
	minBatch int
	// dist is the data-parallel group; nil for a single process.
	dist *dist
	// sess is the private loop Run steps through.
	sess *dptrain.Session
	// ema is the average of the iterates training.ema releases; nil without it.
	ema     *ema
	sampler *data.Sampler
	live    *live
	sigma   float64
	total   int
	hash    string
	canon   config.Canonical
	// elapsedBefore is the training time of the run before it was resumed, began the
	// start of this process's training loop.
	elapsedBefore float64
	began         time.Time
	// changes lists the keys changed on resume (--allow-changes).
	changes []string
	// lastCheckpoint is the newest checkpoint written or resumed from ("" before the first),
	// lastStep its step.
	lastCheckpoint string
	lastStep       int
	// ledger is the run's privacy ledger file (rundir.LedgerFile), which only grows; resumed is the
	// record of it (length and head) in the checkpoint resumed from, nil for a new run.
	ledger  *ledger.File
	resumed *ledger.Anchor
	// givenStop is privacy.stop_accountant as the config gave it, before resolution.
	givenStop string
	// abandoned is the number of steps the ledger holds beyond this branch's trajectory
	// (steps of branches the run abandoned by continuing from an older checkpoint).
	abandoned int
	// lock is the run directory's lock (its rundir.PrivateDir and rundir.LockFile), taken by New.
	lock *rundir.Lock
}

// InterruptedError is the error of New when its context is cancelled (Ctrl-C, SIGTERM) while
// it prepares the run: no training step ran, so no privacy was spent and nothing needs
// resuming. Phase says what New was doing.
type InterruptedError struct {
	Phase string
	Err   error
}

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("interrupted while %s, before the first training step: nothing was trained and no privacy was spent", e.Phase)
}

func (e *InterruptedError) Unwrap() error { return e.Err }

// interrupted returns an InterruptedError for phase when ctx is done, else err: a phase that
// fails because it was cancelled reads as the interruption it is.
func interrupted(ctx context.Context, phase string, err error) error {
	if c := ctx.Err(); c != nil {
		return &InterruptedError{Phase: phase, Err: c}
	}
	return err
}

// New prepares a run: it checks and locks the output directory, loads the data, builds the
// model and optimizer, calibrates the noise if asked, and checks that every configured
// accountant covers the run — all before any training step, so that a misconfigured run fails
// at once. Every phase stops when ctx is cancelled, with an InterruptedError. The run
// directory stays locked until Run returns (or Close).
func New(ctx context.Context, cfg *config.Config, opts Options) (_ *Trainer, err error) {
	t := &Trainer{cfg: cfg, opts: opts, log: opts.Log, algs: opts.Algorithms}
	if t.algs == nil {
		t.algs = config.Builtin()
	}
	if t.log == nil {
		t.log = discard{}
	}
	if err := interrupted(ctx, "checking output.dir", nil); err != nil {
		return nil, err
	}
	if t.dist, err = newDist(opts, t.algs, cfg.Optimizer.Algorithm); err != nil {
		return nil, err
	}
	t.dist.quiet(t)
	if t.dist.leader() {
		if err := t.prepareRunDir(); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	if cfg.Seed == nil && opts.Resume && t.dist.leader() {
		// A seeded run's seed is kept in private/, not in its public config.yaml.
		if cfg.Seed, err = rundir.ReadSeed(cfg.Output.Dir); err != nil {
			return nil, err
		}
		if cfg.Seed != nil {
			t.log.Infof("seed read from %s: the run being resumed is seeded", rundir.PrivatePath(cfg.Output.Dir, rundir.SeedFile))
		}
	}
	if t.dist != nil {
		if t.streams, cfg.Seed, err = t.dist.shareStreams(cfg.Seed); err != nil {
			return nil, err
		}
	}
	if t.canon, err = config.Canonicalize(cfg); err != nil {
		return nil, err
	}
	t.hash = t.canon.Hash()
	// The plan (buildOptimizer) resolves an unset privacy.stop_accountant into cfg; the saved
	// config keeps it as given, so that it has the hash the checkpoints carry and resumes the run.
	t.givenStop = cfg.Privacy.StopAccountant

	if t.streams == nil { // else shared by the ranks of a data-parallel run
		if t.streams, err = dptrain.NewStreams(cfg.Seed); err != nil {
			return nil, err
		}
	}
	if cfg.Seed != nil {
		t.log.Warnf("seed %d is set: sampling and noise are reproducible, so this run is NOT private and must not be released", *cfg.Seed)
	}
	// Synthetic datasets are generated from the fixed seed 0, whatever the run's seed, so that
	// every run and dptrain eval see the same data.
	if t.ds, t.train, t.test, err = loadData(ctx, cfg, 0, t.log, true, opts.Dataset); err != nil {
		return nil, interrupted(ctx, "loading the data", err)
	}
	if opts.TrainSplit != nil {
		if t.train, err = opts.TrainSplit(t.train); err != nil {
			return nil, err
		}
	}
	if err := t.dist.checkSameData(t.train); err != nil {
		return nil, err
	}
	t.log.Infof("data: %s from %s: %d training, %d test examples of shape %v", t.ds.Name, t.ds.Source, t.train.Len(), t.test.Len(), t.ds.Shape)
	if err := interrupted(ctx, "building the model", nil); err != nil {
		return nil, err
	}

	// Initialisation uses its own stream so that it never shares randomness with the noise.
	initStream := t.streams.Split()
	if t.model = opts.Model; t.model == nil {
		spec := modelSpec(cfg.Model, t.ds)
		spec.Chunk = chunkFor(cfg.Optimizer.BatchSize)
		if t.model, err = graph.New(spec, initStream.Rand()); err != nil {
			return nil, err
		}
	}
	if err := checkModelFits(t.model, t.ds); err != nil {
		return nil, err
	}
	if t.dist != nil {
		if err := t.dist.same("initial parameters", t.model.Params(), nil); err != nil {
			return nil, err
		}
	}
	rec, err := config.PreprocessingRecord(cfg)
	if err != nil {
		return nil, err
	}
	t.model.SetPreprocessing(rec)
	n := t.train.Len()
	o := cfg.Optimizer
	alg, err := t.algs.Lookup(o.Algorithm)
	if err != nil {
		return nil, err
	}
	if d := cfg.Privacy.Delta; alg.Private && d >= 1/float64(n) && cfg.Privacy.AllowLargeDelta {
		t.log.Warnf("privacy.delta = %g is not below 1/n = 1/%d (privacy.allow_large_delta is set)", d, n)
	}
	if o.BatchSize > n {
		return nil, fmt.Errorf("optimizer.batch_size %d exceeds the %d training examples", o.BatchSize, n)
	}
	minBatch := o.MinBatchSize
	if o.Sampling == "poisson-with-rejection" && minBatch == 0 {
		// Unset: the largest N_B whose rejection term is negligible (Feng et al., Eq. 9's first term).
		q := float64(o.BatchSize) / float64(n)
		nb, r, err := ulr.DefaultMinBatchSize(q, n-1, ulr.DefaultRejectionBound)
		if err != nil {
			return nil, fmt.Errorf("optimizer.min_batch_size is unset and has no default: %w", err)
		}
		t.log.Infof("optimizer.min_batch_size unset: N_B = %d, the largest threshold whose rejection term (%.3g per step) is ≤ %g (Feng et al., Eq. 9; expected batch %.1f)",
			nb, r, ulr.DefaultRejectionBound, q*float64(n-1))
		minBatch = nb
	}
	t.minBatch = minBatch
	if t.total, err = dptrain.PlannedSteps(data.Scheme(o.Sampling), n, o.BatchSize, minBatch, cfg.Training.Steps, cfg.Training.Epochs); err != nil {
		return nil, err
	}
	sched, err := schedule(o, t.total)
	if err != nil {
		return nil, err
	}

	if err := t.buildOptimizer(ctx, sched); err != nil {
		return nil, err
	}
	// Augmentation's key is split from the run's streams after the sampler's (the plan's).
	if t.opts.Oracle, err = t.augmentation(t.opts.Oracle); err != nil {
		return nil, err
	}
	t.log.Infof("model %s: %d parameters; %s with %s updates, %d steps (q = %.6g)", t.model.Name(), len(t.model.Params()),
		o.Algorithm, t.opt.UpdateRule(), t.total, t.sampler.SampleRate())
	return t, nil
}

// buildOptimizer prepares the configured algorithm and has the library build the run's plan
// from it (dptrain.NewPlan): the sampler, σ (calibrated when auto), the optimizer, the live
// accountants and the stop rule, with every privacy rule checked there.
// Calibration and the accountants' checks stop with an InterruptedError when ctx is done.
func (t *Trainer) buildOptimizer(ctx context.Context, sched optim.Schedule) error {
	cfg, o := t.cfg, t.cfg.Optimizer
	alg, err := t.algs.Lookup(o.Algorithm)
	if err != nil {
		return err
	}
	section, errs := t.algs.Sections(o)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	t.plan, err = alg.Prepare(algorithm.Env{Config: cfg.AlgorithmConfig(), Section: section, Model: modelFacts(t.model), Classes: t.ds.Classes,
		DatasetSize: t.train.Len(), PlannedSteps: t.total, Schedule: sched, Warnf: t.log.Warnf})
	if err != nil {
		return err
	}
	if t.plan.NewOptimizer == nil {
		return fmt.Errorf("train: algorithm %s prepared no optimizer", alg.Name)
	}

	sigma := o.NoiseMultiplier.Value
	calibrate := alg.Private && o.NoiseMultiplier.Auto
	phase := "checking the accountants"
	if calibrate && t.opts.Resume && t.dist.leader() {
		// A resumed run keeps the σ it was calibrated with, even when --allow-changes
		// lengthened it: the stop rule still holds the target, so the lengthened run stops
		// before the step that would exceed it.
		if c, err := rundir.LoadCheckpoint(t.resumePath()); err == nil && c.Header.NoiseMultiplier > 0 {
			sigma, calibrate = c.Header.NoiseMultiplier, false
			t.log.Infof("resuming: the noise multiplier stays σ = %s, calibrated when the run started; training stops before ε would exceed %g",
				FormatUp(sigma, 6), cfg.Privacy.TargetEpsilon)
		}
	}
	switch {
	case !alg.Private:
		sigma = 0
	case calibrate && t.dist.leader():
		t.log.Infof("calibrating the noise multiplier to ε = %g (δ = %g) over %d steps",
			cfg.Privacy.TargetEpsilon, cfg.Privacy.Delta, t.total)
		phase = "calibrating the noise multiplier"
	case calibrate:
		// Rank 0 calibrates; the others take its σ.
		if sigma, err = t.dist.shareSigma(0); err != nil {
			return err
		}
		calibrate = false
	}
	if err := interrupted(ctx, phase, nil); err != nil {
		return err
	}
	if t.dp, err = t.newPlan(ctx, sigma, calibrate); err != nil {
		return interrupted(ctx, phase, err)
	}
	pieces := planparts.Of(t.dp)
	t.sampler, t.opt, t.noise, t.samplerNoise = pieces.Sampler, pieces.Optimizer, pieces.Noise, pieces.SamplerNoise
	t.sigma = t.dp.NoiseMultiplier()
	if calibrate {
		t.log.Infof("calibrated noise multiplier σ = %s (rounded up) for ε = %g (δ = %g, %s) over %d steps",
			FormatUp(t.sigma, 6), cfg.Privacy.TargetEpsilon, cfg.Privacy.Delta, t.dp.StopAccountant(), t.total)
	}
	if t.dist != nil && alg.Private && o.NoiseMultiplier.Auto && t.dist.leader() {
		if _, err = t.dist.shareSigma(t.sigma); err != nil {
			return err
		}
	}
	t.ema = newEMA(cfg.Training.EMA, t.model.Params())
	if !alg.Private || !t.dist.leader() {
		return nil // rank 0 alone accounts for a data-parallel run
	}
	cfg.Privacy.StopAccountant = t.dp.StopAccountant()
	t.live = &live{Live: pieces.Live}
	if t.total > 0 {
		t.live.startLabels = t.dp.Labels()
	}
	return nil
}

// newPlan builds the run's plan at σ (or calibrating it), with the config's privacy settings.
func (t *Trainer) newPlan(ctx context.Context, sigma float64, calibrate bool) (*dptrain.Plan, error) {
	cfg, o := t.cfg, t.cfg.Optimizer
	alg, err := t.algs.Lookup(o.Algorithm)
	if err != nil {
		return nil, err
	}
	pr := cfg.Privacy
	priv := dptrain.Privacy{Delta: pr.Delta, Accountants: pr.Accountants, StopAccountant: pr.StopAccountant, TargetEpsilon: pr.TargetEpsilon,
		AllowLargeDelta: pr.AllowLargeDelta, StopOnUncertifiedBound: pr.StopOnUncertifiedBound, AllowNoGuarantee: pr.AllowNoGuarantee}
	if !t.dist.leader() {
		// Rank 0 alone holds the target; the others follow its decision (Agree).
		priv.TargetEpsilon = 0
	}
	if !alg.Private {
		priv = dptrain.Privacy{}
	}
	run := t.plan.Run
	// An average of the iterates (training.ema) releases a function of every iterate.
	run.LastIterateOnly = cfg.Privacy.Release == "final" && cfg.Training.EMA == 0
	p := dptrain.Parts{Data: t.train, Sampling: data.Scheme(o.Sampling), BatchSize: o.BatchSize, MinBatchSize: t.minBatch,
		Steps:           t.total,
		Optimizer:       dptrain.Mechanism{New: t.plan.NewOptimizer, Run: run, NoAuto: t.plan.NoAuto},
		NoiseMultiplier: sigma, CalibrateNoise: calibrate, NonPrivate: !alg.Private, Privacy: priv, Streams: t.streams,
		Released: func(step int, records []accounting.Step) error {
			if t.ledger == nil {
				return nil
			}
			// Recorded as the step is composed: it has run on the data, whatever happens next.
			return runLedgerError(t.ledger.Append(step, records))
		},
		Names: planKeys}
	if t.dist != nil {
		p.Agree = t.dist.decide
	}
	pl, err := dptrain.NewPlan(ctx, p)
	if err != nil {
		return nil, t.planError(err)
	}
	return pl, nil
}

// planKeys names the library plan's settings, and the declaration fields the accountants'
// refusals name (accounting.RequirementError), by the config keys that set them. Fields
// dptrain declares itself from the run (the loss constants of DP-SGLD, the dataset size) are
// named by a plain description.
var planKeys = map[string]string{
	"Run.LastIterateOnly": "privacy.release: final", "Run.UpdateRule": "optimizer.update",
	"Step.Sensitivity": "optimizer.clip_norm", "Step.StepSize": "optimizer.learning_rate",
	"Run.DatasetSize": "the number of training examples", "Run.Lipschitz": "the loss's Lipschitz constant",
	"Run.Smoothness": "the loss's smoothness", "Run.StrongConvexity": "optimizer.dp_sgld.regularization",
	"Run.DomainDiameter": "optimizer.dp_sgld.radius", "Run.Convexity": "the loss's convexity",
	"Step.Sampling": "optimizer.sampling", "Step.MinBatchSize": "optimizer.min_batch_size",
	"Step.BatchSize": "optimizer.batch_size", "Run.Accountants": "privacy.accountants",
	"Data": "the training split", "Model": "the model", "Optimizer": "optimizer.algorithm", "NonPrivate": "optimizer.algorithm",
	"Sampling": "optimizer.sampling", "BatchSize": "optimizer.batch_size", "MinBatchSize": "optimizer.min_batch_size",
	"Steps": "training.steps", "Epochs": "training.epochs", "NoiseMultiplier": "optimizer.noise_multiplier",
	"CalibrateNoise": "optimizer.noise_multiplier auto", "Seed": "seed", "Streams": "seed",
	"Privacy.Delta": "privacy.delta", "Privacy.Accountants": "privacy.accountants", "Privacy.StopAccountant": "privacy.stop_accountant",
	"Privacy.TargetEpsilon": "privacy.target_epsilon", "Privacy.AllowLargeDelta": "privacy.allow_large_delta",
	"Privacy.StopOnUncertifiedBound": "privacy.stop_on_uncertified_bound", "Privacy.AllowNoGuarantee": "privacy.allow_no_guarantee",
}

// configKey names a declaration field by the config key that sets it (planKeys).
func configKey(field string) string { return planKeys[field] }

// planError is the trainer's message for an error of the library's plan: a refused setting
// (*dptrain.ConfigError) is already in config keys, the declaration fields it names too
// (Parts.Names). It wraps err, so errors.As still finds the ConfigError.
func (t *Trainer) planError(err error) error {
	var ce *dptrain.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	msg := strings.TrimPrefix(err.Error(), "dptrain: ")
	if ce.Key == planKeys["Privacy.Accountants"] && t.cfg.Training.EMA > 0 {
		msg += " (training.ema releases an average of every iterate, which bounds on the last iterate alone do not cover: remove training.ema or that accountant)"
	}
	return &configError{msg: msg, err: err}
}

// configError is an error of the library's plan in the config's terms.
type configError struct {
	msg string
	err error
}

func (e *configError) Error() string { return e.msg }
func (e *configError) Unwrap() error { return e.err }

// declaredRun is the plan's run declaration completed by the trainer: what is released (from
// privacy.release) and, unless the algorithm fixed it, the optimizer's update rule.
func (t *Trainer) declaredRun(opt optim.Optimizer) accounting.Run {
	r := t.plan.Run
	// An average of the iterates (training.ema) releases a function of every iterate.
	r.LastIterateOnly = t.cfg.Privacy.Release == "final" && t.cfg.Training.EMA == 0
	if r.UpdateRule == "" {
		r.UpdateRule = opt.UpdateRule()
	}
	return r
}

// Run trains to the end (or to the privacy target) and returns the summary. It writes the
// final model, summary.json and config.yaml at the top of the output directory, and the
// checkpoints and metrics, which the guarantee does not cover, into its rundir.PrivateDir.
func (t *Trainer) Run(ctx context.Context) (*Summary, error) {
	defer t.Close()
	if !t.dist.leader() {
		return t.follow(ctx)
	}
	cfg := t.cfg
	out := cfg.Output.Dir
	ckptPath := rundir.PrivatePath(out, rundir.CheckpointFile)
	from := t.resumePath()
	if err := rundir.LegacyLayout(out); err != nil {
		return nil, err
	}
	if t.opts.Resume {
		if _, err := os.Stat(from); err != nil {
			return nil, fmt.Errorf("--resume: there is no checkpoint to continue from (%v): run without --resume to start, or set output.dir to the directory of the run to continue", err)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	if err := rundir.MakePrivateDir(out); err != nil {
		return nil, err
	}
	removeStaleTemps(out, t.log)
	removeStaleTemps(rundir.PrivatePath(out), t.log)
	start := 0
	if t.opts.Resume {
		s, err := t.restore(from)
		if err != nil {
			return nil, err
		}
		start = s
		t.lastCheckpoint, t.lastStep = from, s
		t.log.Infof("resumed from %s at step %d of %d", from, start, t.total)
	} else if _, err := os.Stat(ckptPath); err == nil {
		return nil, fmt.Errorf("%s already holds a checkpoint: pass --resume to continue that run, or set output.dir to a new directory", out)
	}
	if t.dist != nil {
		resumed := ""
		if t.opts.Resume {
			resumed = from
		}
		if _, err := t.dist.shareCheckpoint(resumed); err != nil {
			return nil, err
		}
	}
	if err := t.openLedger(start); err != nil {
		return nil, err
	}
	if t.ledger != nil {
		defer t.ledger.Close()
	}
	saved := *cfg
	saved.Privacy.StopAccountant = t.givenStop
	if err := rundir.WriteConfig(out, &saved); err != nil {
		return nil, err
	}

	modes := cfg.Privacy.Accountants
	if t.live == nil {
		modes = nil
	}
	metrics, err := OpenMetrics(rundir.PrivatePath(out), modes, start, 1)
	if err != nil {
		return nil, err
	}
	defer metrics.Close()
	hooks := []Hook{metrics}
	if t.opts.Progress != nil {
		hooks = append(hooks, NewProgress(t.opts.Progress, t.opts.Terminal, t.opts.ProgressWidth, cfg.Training.LogEvery))
	}
	hooks = append(hooks, t.opts.Hooks...)

	var oracle optim.GradientOracle = t.model
	if t.opts.Oracle != nil {
		oracle = t.opts.Oracle(oracle)
	}
	if t.sess, err = t.session(t.dist.oracle(oracle)); err != nil {
		return nil, err
	}
	sess := t.sess
	if start == 0 && t.ema != nil {
		// The session drew the initial iterate of an optimizer that draws its own (DP-SGLD):
		// the average starts from it.
		copy(t.ema.avg, t.model.Params())
	}

	t.began = time.Now()
	var stopped string
	interrupted := false
	step := start
	for step < t.total {
		if err := ctx.Err(); err != nil {
			stopped = fmt.Sprintf("interrupted after step %d of %d", step, t.total)
			interrupted = true
			if t.dist != nil {
				if _, err := t.dist.decide(true); err != nil {
					return nil, err
				}
			}
			break
		}
		res, err := sess.Step()
		if errors.Is(err, dptrain.ErrBudgetExhausted) {
			stopped = fmt.Sprintf("stopped before step %d: it would raise ε[%s] above the target %g", step+1, cfg.Privacy.StopAccountant, cfg.Privacy.TargetEpsilon)
			t.log.Infof("%s", stopped)
			break
		}
		if err != nil {
			return nil, t.stepFailed(err)
		}
		step = res.Step
		t.ema.update(t.model.Params(), step)
		si := &StepInfo{Step: step, TotalSteps: t.total, Epoch: float64(step) * t.sampler.SampleRate(),
			BatchSize: res.Stats.N, LearningRate: res.StepSize, Records: res.Records, ElapsedSec: t.elapsed()}
		if res.Stats.N > 0 {
			si.Loss = res.Stats.Loss / float64(res.Stats.N)
			si.Accuracy = float64(res.Stats.Correct) / float64(res.Stats.N)
		}
		if math.IsNaN(si.Loss) || math.IsInf(si.Loss, 0) {
			// The un-noised batch loss is a function of private data: monitoring only, never a
			// reason to stop (an example with a non-finite input or loss has had its
			// contribution clipped to zero and is counted in NonFinite).
			si.Loss = 0
		}
		si.NonFinite = res.Stats.NonFinite
		if !finite(t.model.Params()) { // released values: the one divergence that stops a run
			return nil, t.diverged(step, "the model's parameters are not finite")
		}
		if e := cfg.Training.EvalEvery; e > 0 && step%e == 0 && step != t.total {
			ev, err := t.Evaluate()
			if err != nil {
				return nil, err
			}
			si.Test = &ev
		}
		if t.live != nil && (step%cfg.Training.PrivacyEvery == 0 || si.Test != nil || step == t.total) {
			si.Privacy = t.live.snapshot(cfg.Privacy.Delta)
		}
		for _, h := range hooks {
			if err := h.AfterStep(si); err != nil {
				return nil, fmt.Errorf("step %d: %w", step, err)
			}
		}
		if err := t.checkRunDir(); err != nil {
			return nil, fmt.Errorf("after step %d: %w", step, err)
		}
		if c := cfg.Training.CheckpointEvery; c > 0 && step%c == 0 {
			if err := t.checkpoint(step); err != nil {
				return nil, t.checkpointFailed(step, err)
			}
		}
	}
	session := time.Since(t.began).Seconds()
	if err := t.checkpoint(step); err != nil {
		return nil, t.checkpointFailed(step, err)
	}
	ev, err := t.Evaluate()
	if err != nil {
		return nil, err
	}
	t.ema.swap(t.model.Params()) // the released model is the average (the checkpoint has both)
	// Only the model of the run's planned end is released. An interrupted run's model is an
	// intermediate iterate: releasing it as well as the final one would be a second release,
	// which no hidden-state (last iterate only) bound covers. It is kept in private/, with
	// its summary, until the run is resumed to its end.
	modelPath, summaryPath := filepath.Join(out, rundir.ModelFile), filepath.Join(out, rundir.SummaryFile)
	if interrupted {
		modelPath, summaryPath = rundir.PrivatePath(out, rundir.InterruptedModelFile), rundir.PrivatePath(out, rundir.InterruptedSummaryFile)
	}
	if err := models.Save(modelPath, t.model); err != nil {
		return nil, err
	}
	sum := &Summary{
		Name: cfg.Name, Algorithm: cfg.Optimizer.Algorithm, Dataset: t.ds.Name, Model: t.model.Name(),
		TestAccuracy: ev.Accuracy, TestLoss: ev.Loss, Steps: step, PlannedSteps: t.total,
		Epochs: float64(step) * t.sampler.SampleRate(), SampleRate: t.sampler.SampleRate(),
		BatchSize: cfg.Optimizer.BatchSize, DatasetSize: t.train.Len(), NoiseMultiplier: t.sigma,
		ClipNorm: cfg.Optimizer.ClipNorm, StoppedEarly: stopped, Interrupted: interrupted, WallSec: t.elapsed(),
		ChangedOnResume: t.changes, ConfigFile: filepath.Join(out, rundir.ConfigFile),
		Reproducible: cfg.Seed != nil, BLAS: models.BLAS(), ModelFile: modelPath, OutputDir: out,
	}
	if interrupted {
		sum.Held = heldNote(step, t.total, modelPath, rundir.PrivatePath(out)+string(filepath.Separator), cfg.Privacy.Accountants, t.plan.Run)
	}
	if sum.ClipNorm == 0 && t.plan.Run.Lipschitz > 0 {
		sum.Lipschitz = t.plan.Run.Lipschitz
	}
	if cfg.Seed != nil {
		sum.NotPrivate = rundir.NotPrivateSeeded
	}
	if t.dist != nil {
		sum.Ranks = t.dist.comm.Size()
	}
	sum.EMA = cfg.Training.EMA
	if step > start {
		sum.MsPerStep = 1000 * session / float64(step-start)
	}
	if t.live != nil {
		sum.Delta, sum.TargetEpsilon = cfg.Privacy.Delta, cfg.Privacy.TargetEpsilon
		sum.StopAccountant = cfg.Privacy.StopAccountant
		sum.Epsilon = t.live.snapshot(cfg.Privacy.Delta)
		sum.CertifiedEpsilon = t.certifiedBeside(sum.Epsilon)
		sum.TargetBound = targetBound(cfg.Privacy, sum.Epsilon, sum.CertifiedEpsilon)
		sum.LedgerSteps, sum.AbandonedSteps = t.ledger.Executed(), t.abandoned
		if t.abandoned > 0 {
			sum.Rewind = fmt.Sprintf("ε counts all %d private steps executed on this data, %d of them on branches abandoned by resuming from an older checkpoint (or lost in a crash after the last one): privacy spent is never given back", t.ledger.Executed(), t.abandoned)
		}
		sum.PublicQuantities = fmt.Sprintf(PublicQuantitiesNote, t.train.Len())
	}
	if err := data.WriteFileAtomic(summaryPath, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}); err != nil {
		return nil, err
	}
	if err := rundir.WriteTiming(out, rundir.Timing{WallSec: sum.WallSec, MsPerStep: sum.MsPerStep, BLAS: sum.BLAS}); err != nil {
		return nil, err
	}
	return sum, nil
}

// Evaluate returns the loss and accuracy of the current model on the test split.
func (t *Trainer) Evaluate() (Evaluation, error) {
	if t.test.Len() == 0 {
		return Evaluation{}, nil
	}
	t.ema.swap(t.model.Params()) // evaluate the average the run releases
	defer t.ema.swap(t.model.Params())
	s, err := t.model.Evaluate(data.Batch{X: t.test.X[:t.test.N*t.test.D], Y: t.test.Y[:t.test.N], N: t.test.N})
	if err != nil {
		return Evaluation{}, err
	}
	return Evaluation{Loss: s.Loss / float64(s.N), Accuracy: float64(s.Correct) / float64(s.N), N: s.N}, nil
}

// Model returns the model being trained.
func (t *Trainer) Model() models.Model { return t.model }

// PlannedSteps returns the number of steps the run will take unless stopped early.
func (t *Trainer) PlannedSteps() int { return t.total }

// NoiseMultiplier returns σ (after calibration).
func (t *Trainer) NoiseMultiplier() float64 { return t.sigma }

func finite(v []float32) bool {
	for _, x := range v {
		if x-x != 0 {
			return false
		}
	}
	return true
}

// resumePath is the checkpoint a resume continues from: Options.ResumeFrom, else the run's
// newest.
func (t *Trainer) resumePath() string {
	if t.opts.ResumeFrom != "" {
		return t.opts.ResumeFrom
	}
	return rundir.PrivatePath(t.cfg.Output.Dir, rundir.CheckpointFile)
}

// modelFacts is what an algorithm's Prepare reads of nw (algorithm.Model).
func modelFacts(nw *models.Network) algorithm.Model {
	spec := nw.Spec()
	return algorithm.Model{Name: nw.Name(), Kind: spec.Kind, Activation: spec.Activation, NoBias: spec.NoBias,
		Layout: nw.Layout(), LinearLayers: nw.LinearLayers()}
}
