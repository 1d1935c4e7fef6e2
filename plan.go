package dptrain

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modes"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/planparts"
	"github.com/dptrain/dptrain/optim"
)

// maxPlannedSteps bounds the steps calibration replays (it asks the optimizer for every planned
// step's records, so its work grows with the step count: 10⁷ steps take about 12 s).
const maxPlannedSteps = 10_000_000

// stopPreference is the order in which a certified stopping and calibration accountant is
// chosen when none is named. RDP comes before PLD: PLD is tighter, but its per-step overshoot
// check costs more (about 0.1 s a step on the quick start, against milliseconds for RDP), so
// PLD governs stopping only when named.
var stopPreference = []string{"rdp", "pld"}

// Streams is the root of a run's secret randomness: the noise the optimizer adds, and the
// stream its plan splits off for the sampler. Only NewStreams and SharedStreams build one, and
// it knows whether it was seeded, so a session built from it cannot report itself private when
// its noise is predictable. A Streams builds one plan.
//
// Split gives a caller streams of its own (a model's initialisation, data augmentation),
// independent of the sampler's and the noise's.
type Streams struct {
	root *optim.Noise
	used bool
}

// NewStreams returns streams seeded from crypto/rand (seed nil: the only kind of run that may
// be released) or, for a reproducible run that is NOT private, from seed.
func NewStreams(seed *uint64) (*Streams, error) {
	if seed != nil {
		return &Streams{root: optim.NewSeededNoise(*seed)}, nil
	}
	n, err := optim.NewNoise()
	if err != nil {
		return nil, fmt.Errorf("dptrain: %w", err)
	}
	return &Streams{root: n}, nil
}

// SharedStreams returns the streams every rank of a data-parallel run builds from one secret
// key (optim.NewNoiseKey on rank 0, sent to the others only), so that they draw the same
// batches and the same noise. They are private: Reproducible reports false.
func SharedStreams(key [32]byte) *Streams { return &Streams{root: optim.NewSharedNoise(key)} }

// Reproducible reports whether the streams were fixed by a seed (the run is then not private).
func (s *Streams) Reproducible() bool { return s.root.Reproducible() }

// Split returns a new stream seeded from the root, for the caller's own use. Splits are taken
// in order: a seeded run that splits the same streams in the same order is reproducible.
func (s *Streams) Split() *optim.Noise { return s.root.Split() }

// Mechanism is the optimizer's configuration: how to build it, and what the run declares.
type Mechanism struct {
	// New builds the optimizer at noise multiplier sigma, drawing all its randomness from
	// noise: the stream the plan owns, which the built optimizer must report as its own
	// (optim.NoiseDrawer). Calibration calls it with other streams and asks the optimizer's
	// declarations (optim.StepDeclarer) at each σ; it never steps those.
	New func(sigma float64, noise *optim.Noise) (optim.Optimizer, error)
	// Run is the run-level declaration the accountants check. DatasetSize and, when empty,
	// UpdateRule are filled from the data and the optimizer.
	Run accounting.Run
	// NoAuto, when set, says why σ cannot be calibrated for this run.
	NoAuto string
}

// Privacy is the privacy half of a run's settings.
type Privacy struct {
	// Delta is δ of the (ε, δ) guarantee: every ε is reported at it. It must be below 1/n.
	Delta float64
	// Accountants names the accountants that follow the run side by side (accounting/modes);
	// nil means {"rdp"}.
	Accountants []string
	// StopAccountant is the accountant whose ε is held to TargetEpsilon and calibrated; ""
	// picks the first certified one (rdp, then pld, then the order of Accountants). It must be
	// certified for this run.
	StopAccountant string
	// TargetEpsilon, when positive, is the ε the session never exceeds: Step refuses, before
	// running it, any step after which the stopping accountant's ε would exceed it.
	TargetEpsilon float64
	// Ledger, when set, is the directory of the ledger store that keeps the data's privacy
	// ledger across sessions and processes (package ledger), created when missing. The
	// session locks it, composes every step it holds (of every session that ever trained on
	// these data with this store, on every branch) before its first step, and writes each
	// step's records to it before the step returns: ε then counts every step ever run on the
	// data, whatever checkpoint a session restores. Without a store a session counts its own
	// steps and the ledger of the checkpoint it restores, and every Guarantee says so
	// (Guarantee.Store is "").
	Ledger string

	// AllowLargeDelta accepts δ ≥ 1/n (to compare with a paper that uses one).
	AllowLargeDelta bool
	// StopOnUncertifiedBound lets a paper or approximate accountant govern stopping and
	// calibration. CertifiedEpsilon still reports a certified bound, never that one.
	StopOnUncertifiedBound bool
	// AllowNoGuarantee lets a private run without a target train although no listed
	// accountant covers it (every ε is then an error).
	AllowNoGuarantee bool
}

// Parts are what a private training loop is built from: the model, the data, the optimizer's
// configuration and the privacy settings. The plan builds everything that carries a privacy
// claim from them itself: the sampler (a data.Sampler over Data, drawing from a stream it
// owns), the noise stream the optimizer draws from, the optimizer (calibrated when asked), the
// accountants and the stop rule; the session gathers every batch from Data with the indices
// its sampler drew. No part of a run's declaration is taken from the caller.
type Parts struct {
	// Model is trained in place (NewSession; NewPlan does not need it).
	Model optim.GradientOracle
	// Data is the training set: N examples of D features, with labels. It must not change
	// while the session runs.
	Data *data.Split
	// Sampling is the sampling scheme ("" means data.SchemePoisson); BatchSize the expected
	// batch size b under Poisson sampling (q = b/n), the batch size otherwise; MinBatchSize
	// the threshold of data.SchemePoissonWithRejection.
	Sampling     data.Scheme
	BatchSize    int
	MinBatchSize int
	// Steps is the number of planned steps; alternatively Epochs (exactly one is set).
	Steps  int
	Epochs float64
	// Optimizer is the optimizer's configuration.
	Optimizer Mechanism
	// NoiseMultiplier is σ, given to Optimizer.New; with CalibrateNoise it must be 0 and the
	// plan calibrates σ: the smallest for which the stopping accountant's ε after the planned
	// steps is at most Privacy.TargetEpsilon.
	NoiseMultiplier float64
	CalibrateNoise  bool
	// NonPrivate builds a non-private baseline: no accountants, no target, σ = 0, and
	// Private reports false.
	NonPrivate bool
	Privacy    Privacy
	// Seed, when set, fixes every stream: the run is reproducible and NOT private. Streams,
	// when set instead, are the streams to use (NewStreams, SharedStreams), for a caller who
	// splits streams of its own from them first. Neither: fresh streams from crypto/rand.
	Seed    *uint64
	Streams *Streams
	// Released, when set, is called with each step's records after the step ran on the data,
	// as they are composed (a run's ledger file is written here). If it fails the session
	// stops with a *LedgerError.
	Released func(step int, records []accounting.Step) error
	// Agree, when set, is called before every step with this process's stop decision and
	// returns the group's (a data-parallel run: rank 0's, which every rank follows). The
	// session stops when either says so.
	Agree func(stop bool) (bool, error)
	// Names, when set, names the settings in error messages in the caller's own terms (a
	// config file's keys): "Privacy.Delta" → "privacy.delta", and the declaration fields an
	// accountant's refusal names (accounting.RequirementError): "Run.LastIterateOnly" →
	// "privacy.release: final". A setting mapped to "" is not offered in a message's fix.
	Names map[string]string
}

// names renders setting names in a caller's terms.
type names struct {
	m      map[string]string
	prefix string
}

// k returns the caller's name for setting.
func (n names) k(setting string) string {
	if v, ok := n.m[setting]; ok && v != "" {
		return v
	}
	return n.prefix + setting
}

// offered reports whether the caller has setting (an opt-in a fix may suggest).
func (n names) offered(setting string) bool {
	v, ok := n.m[setting]
	return !ok || v != ""
}

// Plan is a private run, assembled and checked, before its first step: the sampler, the noise
// streams, the optimizer, the accountants and the stop rule, all built from Parts by NewPlan.
// Plan.NewSession runs it. The same plan serves the library (NewSession, MakePrivate) and the
// YAML trainer (package train), so the rules live in one place.
type Plan struct {
	names        names
	parts        Parts
	data         *data.Split
	streams      *Streams
	samplerNoise *optim.Noise
	sampler      *data.Sampler
	opt          optim.Optimizer
	run          accounting.Run
	live         *accounting.Live
	sigma        float64
	planned      int
	delta        float64
	// stop is the accountant that governs stopping and calibration; certified a configured
	// accountant certified for this run ("" if none).
	stop, certified string
	labels          map[string]accounting.Label
	reasons         map[string]string
	first           []accounting.Step
	private         bool
	used            bool
}

// PlannedSteps returns the number of steps of a run over n examples drawn by scheme with batch
// size b: steps when it is set, else epochs passes over the data (⌈E/q⌉ steps under the
// Poisson schemes, E × steps per epoch otherwise).
func PlannedSteps(scheme data.Scheme, n, b, minBatch, steps int, epochs float64) (int, error) {
	if steps > 0 {
		return steps, nil
	}
	if scheme == "" {
		scheme = data.SchemePoisson
	}
	s, err := data.NewSampler(scheme, n, b, minBatch, rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return 0, err
	}
	if scheme == data.SchemePoisson || scheme == data.SchemePoissonWithRejection {
		return int(math.Ceil(epochs/s.SampleRate() - 1e-9)), nil
	}
	return int(math.Ceil(epochs*float64(s.StepsPerEpoch()) - 1e-9)), nil
}

// NewPlan checks p and builds its run: the sampler, the optimizer (σ calibrated when asked),
// the accountants and the stop rule. It stops, with an error wrapping ctx.Err(), once ctx is
// done (calibration can take seconds). A refused setting is a *ConfigError.
func NewPlan(ctx context.Context, p Parts) (*Plan, error) {
	return newPlan(ctx, p, names{m: p.Names, prefix: "Parts."})
}

func newPlan(ctx context.Context, p Parts, nm names) (*Plan, error) {
	pl, err := buildPlan(ctx, p, nm)
	var ce *ConfigError
	if errors.As(err, &ce) && ce.field == nil {
		ce.field = func(f string) string { return nm.m[f] }
	}
	return pl, err
}

func buildPlan(ctx context.Context, p Parts, nm names) (*Plan, error) {
	bad := func(setting string, value any, reason, fix string) error {
		return &ConfigError{Key: nm.k(setting), Value: value, Reason: reason, Fix: fix}
	}
	if p.Data == nil || p.Data.Len() == 0 {
		return nil, bad("Data", nil, "holds no examples", "pass the training set")
	}
	n, d := p.Data.Len(), p.Data.Dim()
	if d <= 0 || len(p.Data.X) < n*d || (p.Data.Y != nil && len(p.Data.Y) < n) {
		return nil, bad("Data", nil, fmt.Sprintf("declares %d examples of %d features and holds %d values and %d labels", n, d, len(p.Data.X), len(p.Data.Y)),
			"X holds N rows of D features, row-major, and Y one label per row")
	}
	// A model that says what it takes (models.Network does) is checked against the data here,
	// naming the example, before any step spends privacy on data that would fail later.
	if m, ok := p.Model.(interface {
		Classes() int
		InputShape() []int
	}); ok {
		width := 1
		for _, v := range m.InputShape() {
			width *= v
		}
		if width != d {
			return nil, bad("Data", nil, fmt.Sprintf("has examples of %d features and the model takes %d", d, width), "pass data of the model's input shape, or a model for this data")
		}
		for i, y := range p.Data.Y[:n] {
			if y < 0 || int(y) >= m.Classes() {
				return nil, bad("Data", nil, fmt.Sprintf("example %d has label %d, outside the model's [0, %d)", i, y, m.Classes()), "fix the labels, or give the model as many classes as the data has")
			}
		}
	}
	if p.Optimizer.New == nil {
		return nil, bad("Optimizer", nil, "has no constructor (Mechanism.New)", "set it to build the optimizer from σ and the plan's noise stream")
	}
	pl := &Plan{names: nm, parts: p, data: p.Data, delta: p.Privacy.Delta}
	switch {
	case p.Streams != nil && p.Seed != nil:
		return nil, bad("Seed", *p.Seed, "and "+nm.k("Streams")+" are both set", "set one of them")
	case p.Streams != nil:
		if p.Streams.used {
			return nil, bad("Streams", nil, "already built a plan", "build every plan from streams of its own (NewStreams)")
		}
		pl.streams = p.Streams
	default:
		var err error
		if pl.streams, err = NewStreams(p.Seed); err != nil {
			return nil, err
		}
	}
	if p.Sampling == "" {
		p.Sampling = data.SchemePoisson
		pl.parts.Sampling = p.Sampling
	}
	if (p.Steps > 0) == (p.Epochs > 0) || p.Steps < 0 || !(p.Epochs >= 0) || math.IsInf(p.Epochs, 0) {
		return nil, bad("Steps", p.Steps, fmt.Sprintf("= %d, %s = %v", p.Steps, nm.k("Epochs"), p.Epochs), "set exactly one of them to a positive number")
	}
	var err error
	if pl.planned, err = PlannedSteps(p.Sampling, n, p.BatchSize, p.MinBatchSize, p.Steps, p.Epochs); err != nil {
		return nil, &ConfigError{Key: nm.k("Sampling") + ", " + nm.k("BatchSize"), Value: p.Sampling, Err: err}
	}
	if p.NonPrivate {
		err = pl.buildBaseline()
	} else {
		err = pl.buildPrivate(ctx)
	}
	if err != nil {
		return nil, err
	}
	pl.streams.used = true
	return pl, nil
}

// checkPrivacy checks the privacy settings that do not depend on the run's records.
func (pl *Plan) checkPrivacy() error {
	p, nm, n := &pl.parts, pl.names, pl.data.Len()
	pr := &p.Privacy
	bad := func(setting string, value any, reason, fix string) error {
		return &ConfigError{Key: nm.k(setting), Value: value, Reason: reason, Fix: fix}
	}
	if !(pr.Delta > 0 && pr.Delta < 1) {
		return bad("Privacy.Delta", pr.Delta, fmt.Sprintf("= %g is not in (0, 1/n) = (0, 1/%d)", pr.Delta, n),
			fmt.Sprintf("every ε is stated at δ; use e.g. %.1g", suggestDelta(n)))
	}
	if pr.Delta >= 1/float64(n) && !pr.AllowLargeDelta {
		fix := fmt.Sprintf("lower %s (e.g. %.1g)", nm.k("Privacy.Delta"), suggestDelta(n))
		if nm.offered("Privacy.AllowLargeDelta") {
			fix = fmt.Sprintf("Lower %s (e.g. %.1g), or set %s: true to keep it", nm.k("Privacy.Delta"), suggestDelta(n), nm.k("Privacy.AllowLargeDelta"))
		}
		return bad("Privacy.Delta", pr.Delta, fmt.Sprintf("= %g is not below 1/n = 1/%d for this run's %d training examples: with δ ≥ 1/n a mechanism may publish whole records and still meet (ε, δ)", pr.Delta, n, n), fix)
	}
	if pr.TargetEpsilon < 0 || math.IsNaN(pr.TargetEpsilon) || math.IsInf(pr.TargetEpsilon, 0) {
		return bad("Privacy.TargetEpsilon", pr.TargetEpsilon, "must be a finite number ≥ 0", "0 sets no target")
	}
	if p.CalibrateNoise {
		if p.NoiseMultiplier != 0 {
			return bad("NoiseMultiplier", p.NoiseMultiplier, "is set and σ is to be calibrated", "leave it 0 to calibrate, or give σ and do not calibrate")
		}
		if !(pr.TargetEpsilon > 0) {
			return bad("Privacy.TargetEpsilon", pr.TargetEpsilon, "must be a positive finite number to calibrate σ for it", "set the target ε")
		}
		if p.Optimizer.NoAuto != "" {
			return &ConfigError{Key: nm.k("CalibrateNoise"), Value: true, Reason: ": " + p.Optimizer.NoAuto, Fix: fmt.Sprintf("give %s a number", nm.k("NoiseMultiplier"))}
		}
		if pl.planned > maxPlannedSteps {
			return bad("CalibrateNoise", true, fmt.Sprintf(": the run plans %d steps, and calibrating σ replays the declared records of every planned step; more than %d steps is refused", pl.planned, maxPlannedSteps),
				fmt.Sprintf("lower %s or %s, or give %s a number", nm.k("Steps"), nm.k("Epochs"), nm.k("NoiseMultiplier")))
		}
	} else if !(p.NoiseMultiplier > 0) || math.IsInf(p.NoiseMultiplier, 0) {
		return bad("NoiseMultiplier", p.NoiseMultiplier, "must be a positive finite number", "set σ (around 1 is common), or calibrate it for a target ε")
	}
	if len(pr.Accountants) == 0 {
		pr.Accountants = []string{"rdp"}
	}
	pr.Accountants = slices.Clone(pr.Accountants)
	if s := pr.StopAccountant; s != "" && !slices.Contains(pr.Accountants, s) {
		return bad("Privacy.StopAccountant", s, fmt.Sprintf("%q is not among %s %v", s, nm.k("Privacy.Accountants"), pr.Accountants), "add it there")
	}
	return nil
}

// suggestDelta is a δ well below 1/n.
func suggestDelta(n int) float64 { return math.Pow(10, math.Floor(math.Log10(0.1/float64(n)))) }

// newSampler builds the plan's sampler, on its own stream split from the root: the sampler
// never shares the noise's stream.
func (pl *Plan) newSampler() error {
	p := pl.parts
	pl.samplerNoise = pl.streams.root.Split()
	var err error
	if pl.sampler, err = data.NewSampler(p.Sampling, pl.data.Len(), p.BatchSize, p.MinBatchSize, pl.samplerNoise.Rand()); err != nil {
		return &ConfigError{Key: pl.names.k("Sampling") + ", " + pl.names.k("BatchSize"), Value: p.Sampling, Err: err}
	}
	return nil
}

// buildBaseline builds a non-private plan: σ = 0, no accountants.
func (pl *Plan) buildBaseline() error {
	p, nm := pl.parts, pl.names
	if p.Privacy.TargetEpsilon != 0 || p.CalibrateNoise || p.NoiseMultiplier != 0 {
		return &ConfigError{Key: nm.k("NonPrivate"), Value: true, Reason: "is set with a noise multiplier or a privacy target", Fix: "a non-private baseline has neither"}
	}
	if err := pl.newSampler(); err != nil {
		return err
	}
	var err error
	if pl.opt, err = p.Optimizer.New(0, pl.streams.root); err != nil {
		return err
	}
	pl.run = pl.declaredRun(pl.opt)
	return nil
}

// declaredRun is the mechanism's run declaration completed from the data and opt.
func (pl *Plan) declaredRun(opt optim.Optimizer) accounting.Run {
	r := pl.parts.Optimizer.Run
	if r.DatasetSize == 0 {
		r.DatasetSize = pl.data.Len()
	}
	if r.UpdateRule == "" {
		r.UpdateRule = opt.UpdateRule()
	}
	return r
}

// buildPrivate builds the sampler, the optimizer, the accountants and the stop rule of a
// private plan.
func (pl *Plan) buildPrivate(ctx context.Context) error {
	if err := pl.checkPrivacy(); err != nil {
		return err
	}
	if err := pl.newSampler(); err != nil {
		return err
	}
	p, nm := &pl.parts, pl.names
	pr := &p.Privacy
	// A probe optimizer, on a stream of its own that it never draws from, declares the
	// planned steps: at σ = 1 when σ is to be calibrated (every σ-dependent field of a record
	// is linear in σ).
	probeSigma := p.NoiseMultiplier
	if p.CalibrateNoise {
		probeSigma = 1
	}
	probe, err := p.Optimizer.New(probeSigma, optim.NewSeededNoise(0))
	if err != nil {
		return err
	}
	decl, ok := probe.(optim.StepDeclarer)
	if !ok {
		if p.CalibrateNoise {
			return &ConfigError{Key: nm.k("CalibrateNoise"), Value: true,
				Reason: fmt.Sprintf(": optimizer %T does not declare the records of its planned steps (optim.StepDeclarer), so σ cannot be calibrated", probe),
				Fix:    fmt.Sprintf("give %s a number", nm.k("NoiseMultiplier"))}
		}
		return &ConfigError{Key: nm.k("Optimizer"), Reason: fmt.Sprintf("builds %T, which does not declare its steps (optim.StepDeclarer): no accountant can be checked before training", probe),
			Fix: "implement DeclareStep"}
	}
	pl.run = pl.declaredRun(probe)
	if pl.live, err = accounting.NewLive(pr.Accountants, func(name string) (accounting.Accountant, error) { return modes.New(name, pl.run) }); err != nil {
		return &ConfigError{Key: nm.k("Privacy.Accountants"), Value: pr.Accountants, Err: err,
			Fix: "remove it from the list, or change the run so that its assumptions hold"}
	}
	first, err := pl.declare(decl, 0)
	if err != nil {
		return err
	}
	if err := pl.cover(ctx, first); err != nil {
		return err
	}
	pl.sigma = p.NoiseMultiplier
	if p.CalibrateNoise {
		if pl.sigma, err = pl.calibrate(ctx, decl); err != nil {
			return err
		}
	}
	if pl.opt, err = p.Optimizer.New(pl.sigma, pl.streams.root); err != nil {
		return err
	}
	nd, ok := pl.opt.(optim.NoiseDrawer)
	switch {
	case !ok:
		return &ConfigError{Key: nm.k("Optimizer"), Reason: fmt.Sprintf("builds %T, which does not report the stream it draws its noise from (optim.NoiseDrawer)", pl.opt),
			Fix: "implement NoiseStream, returning the stream Mechanism.New was given"}
	case nd.NoiseStream() != pl.streams.root:
		return &ConfigError{Key: nm.k("Optimizer"), Reason: fmt.Sprintf("builds %T drawing from a noise stream other than the plan's", pl.opt),
			Fix: "build the optimizer with the stream Mechanism.New is given: a stream of the caller's (a seeded one, say) would make a session that is not private report itself private"}
	}
	if _, ok := pl.opt.(optim.StepDeclarer); !ok {
		return &ConfigError{Key: nm.k("Optimizer"), Reason: fmt.Sprintf("builds %T, which does not declare its steps (optim.StepDeclarer)", pl.opt), Fix: "implement DeclareStep"}
	}
	if pl.first, err = pl.declare(pl.opt.(optim.StepDeclarer), 0); err != nil {
		return err
	}
	if p.CalibrateNoise {
		// Check the accountants again on the records of the calibrated optimizer.
		if err := pl.cover(ctx, pl.first); err != nil {
			return err
		}
	}
	pl.private = !pl.streams.Reproducible()
	return nil
}

// declare returns the records decl declares for planned step k (none for a plan of no steps).
func (pl *Plan) declare(decl optim.StepDeclarer, k int) ([]accounting.Step, error) {
	if k >= pl.planned {
		return nil, nil
	}
	recs, err := decl.DeclareStep(k, pl.sampler.Planned(k))
	if err != nil {
		return nil, &ConfigError{Key: pl.names.k("Optimizer"), Reason: fmt.Sprintf("cannot declare step %d", k+1), Err: err}
	}
	if len(recs) == 0 {
		return nil, &ConfigError{Key: pl.names.k("Optimizer"), Reason: fmt.Sprintf("declares no record for step %d", k+1), Fix: "an optimizer must declare what it releases"}
	}
	return recs, nil
}

// cover probes every configured accountant with the records of the first step (every record:
// an accountant that covers one record of a multi-record step may refuse the next) and
// resolves the stopping accountant: an accountant that cannot soundly account for the run says
// so with an error here, before any step.
func (pl *Plan) cover(ctx context.Context, first []accounting.Step) error {
	pr, nm := &pl.parts.Privacy, pl.names
	pl.labels, pl.reasons = map[string]accounting.Label{}, map[string]string{}
	for _, name := range pr.Accountants {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("dptrain: %s: probing the accountants stopped before %s: %w", nm.k("Privacy.Accountants"), name, err)
		}
		a, err := modes.New(name, pl.run)
		for _, s := range first {
			if err == nil {
				err = a.Compose(s)
			}
		}
		var g accounting.Guarantee
		if err == nil && len(first) > 0 {
			g, err = a.Epsilon(pr.Delta)
		} else if err == nil {
			g.Label = a.Label()
		}
		if err != nil {
			pl.reasons[name] = err.Error()
			continue
		}
		pl.labels[name] = g.Label
	}
	cert := pl.certifiedNames()
	pl.certified = ""
	if len(cert) > 0 {
		pl.certified = cert[0]
	}
	stop, err := pl.resolveStop(cert)
	if err != nil {
		return err
	}
	pl.stop = stop
	return nil
}

// certifiedNames lists the configured accountants certified for the run, in stopPreference
// order, then the configured one.
func (pl *Plan) certifiedNames() []string {
	var out []string
	for _, n := range append(slices.Clone(stopPreference), pl.parts.Privacy.Accountants...) {
		if pl.labels[n] == accounting.Certified && slices.Contains(pl.parts.Privacy.Accountants, n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// explain lists each refusing accountant's reason.
func (pl *Plan) explain() string {
	var parts []string
	for _, n := range pl.parts.Privacy.Accountants {
		if r, ok := pl.reasons[n]; ok {
			parts = append(parts, n+": "+r)
		}
	}
	return strings.Join(parts, "; ")
}

// resolveStop checks that some configured accountant covers the run and picks the accountant
// whose ε governs stopping and calibration: the one named in Privacy.StopAccountant, else the
// first certified one. Only a certified accountant may govern, unless
// Privacy.StopOnUncertifiedBound opts in.
func (pl *Plan) resolveStop(cert []string) (string, error) {
	pr, nm := pl.parts.Privacy, pl.names
	if len(pl.labels) == 0 && pr.AllowNoGuarantee && pr.TargetEpsilon <= 0 {
		return "", nil
	}
	if len(pl.labels) == 0 {
		fix := fmt.Sprintf("add one whose theorem covers it (for example rdp with poisson sampling), or change %s", nm.k("Sampling"))
		if nm.offered("Privacy.AllowNoGuarantee") {
			fix += fmt.Sprintf(" (%s: true trains without one)", nm.k("Privacy.AllowNoGuarantee"))
		}
		return "", &ConfigError{Key: nm.k("Privacy.Accountants"), Value: pr.Accountants,
			Reason: fmt.Sprintf(": no configured accountant covers this run (%s)", pl.explain()), Fix: fix}
	}
	if pr.TargetEpsilon <= 0 {
		// Nothing to stop for: the named accountant, if any, is reported as such;
		// CertifiedEpsilon uses a certified one whatever it is.
		return pr.StopAccountant, nil
	}
	optIn := ""
	if nm.offered("Privacy.StopOnUncertifiedBound") {
		optIn = nm.k("Privacy.StopOnUncertifiedBound")
	}
	if name := pr.StopAccountant; name != "" {
		if r, ok := pl.reasons[name]; ok {
			return "", &ConfigError{Key: nm.k("Privacy.StopAccountant"), Value: name, Accountant: name, Theorem: theorems[name],
				Reason: fmt.Sprintf("%s does not cover this run: %s", name, r), Fix: "choose another scheme or accountant", Certified: cert}
		}
		if l := pl.labels[name]; l != accounting.Certified && !pr.StopOnUncertifiedBound {
			fix := fmt.Sprintf("name a certified accountant (%s)", strings.Join(cert, ", "))
			if len(cert) == 0 {
				fix = "add a certified accountant (rdp or pld, where they cover the run) and name it"
			}
			if optIn != "" {
				fix += fmt.Sprintf(", or set %s: true to stop and calibrate under it", optIn)
			}
			return "", &ConfigError{Key: nm.k("Privacy.StopAccountant"), Value: name, Accountant: name, Label: l, Theorem: theorems[name],
				Reason: fmt.Sprintf("%s gives a %s bound, not a certified one: only a certified accountant may decide when to stop", name, l), Fix: fix, Certified: cert}
		}
		return name, nil
	}
	if len(cert) > 0 {
		return cert[0], nil
	}
	if pr.StopOnUncertifiedBound {
		for _, n := range pr.Accountants {
			if _, ok := pl.labels[n]; ok {
				return n, nil
			}
		}
	}
	fix := fmt.Sprintf("add rdp or pld to %s", nm.k("Privacy.Accountants"))
	if optIn != "" {
		fix += fmt.Sprintf(", or set %s and %s: true", nm.k("Privacy.StopAccountant"), optIn)
	}
	return "", &ConfigError{Key: nm.k("Privacy.TargetEpsilon"), Value: pr.TargetEpsilon,
		Reason: fmt.Sprintf(": no configured accountant gives a certified bound for this run (%v)", pl.labels), Fix: fix}
}

// calibrate returns the smallest σ (to a relative tolerance of 1e-4, rounded up) for which the
// stopping accountant's ε after the planned steps, as decl declares them at σ = 1, is at most
// the target. The live accountant still checks every real step against the target, so a
// calibration that were off could only stop training early, never overshoot.
func (pl *Plan) calibrate(ctx context.Context, decl optim.StepDeclarer) (float64, error) {
	pr, nm := pl.parts.Privacy, pl.names
	var records []accounting.Step
	for k := range pl.planned {
		if k%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, fmt.Errorf("dptrain: %s: calibration stopped at planned step %d of %d: %w", nm.k("CalibrateNoise"), k, pl.planned, err)
			}
		}
		recs, err := pl.declare(decl, k)
		if err != nil {
			return 0, err
		}
		for _, r := range recs {
			records = accounting.AppendRecord(records, r)
		}
	}
	run := pl.run
	newAcct := func() (accounting.Accountant, error) { return modes.New(pl.stop, run) }
	sigma, _, err := accounting.CalibrateRecords(ctx, newAcct, records, pr.TargetEpsilon, pr.Delta)
	if err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("dptrain: %s: %w", nm.k("Privacy.TargetEpsilon"), err)
		}
		return 0, &ConfigError{Key: nm.k("Privacy.TargetEpsilon"), Value: pr.TargetEpsilon, Accountant: pl.stop, Err: err}
	}
	return sigma, nil
}

// NoiseMultiplier returns σ: the one given, or the calibrated one (0 for a baseline).
func (pl *Plan) NoiseMultiplier() float64 { return pl.sigma }

// PlannedSteps returns the number of steps the plan runs unless the target stops it first.
func (pl *Plan) PlannedSteps() int { return pl.planned }

// SampleRate returns q, the sampler's rate.
func (pl *Plan) SampleRate() float64 { return pl.sampler.SampleRate() }

// Scheme returns the sampling scheme.
func (pl *Plan) Scheme() data.Scheme { return pl.sampler.Scheme() }

// StepsPerEpoch returns the sampler's steps per epoch.
func (pl *Plan) StepsPerEpoch() int { return pl.sampler.StepsPerEpoch() }

// Run returns the run declaration the accountants check.
func (pl *Plan) Run() accounting.Run { return pl.run }

// Delta returns δ, at which every ε is reported.
func (pl *Plan) Delta() float64 { return pl.delta }

// StopAccountant returns the accountant that governs stopping and calibration: the one named,
// or with a target the first certified one ("" when none does: a run without a target that
// names none, or a baseline).
func (pl *Plan) StopAccountant() string { return pl.stop }

// Accountants returns the names of the plan's accountants (nil for a baseline).
func (pl *Plan) Accountants() []string {
	if pl.live == nil {
		return nil
	}
	return pl.live.Names()
}

// Labels returns the label each configured accountant gives this run once it has composed
// the first planned step; an accountant that does not cover the run is absent.
func (pl *Plan) Labels() map[string]accounting.Label {
	out := make(map[string]accounting.Label, len(pl.labels))
	for k, v := range pl.labels {
		out[k] = v
	}
	return out
}

// FirstStep returns the records the optimizer declares for the first planned step.
func (pl *Plan) FirstStep() []accounting.Step { return slices.Clone(pl.first) }

// Private reports whether the plan's randomness is unpredictable and its steps are accounted
// for: false for a seeded plan (Seed, or seeded Streams), for a baseline, and once a stream
// of the plan has been replaced by a saved, seeded state (optim.Noise.UnmarshalBinary).
func (pl *Plan) Private() bool {
	return pl.private && !pl.streams.Reproducible() && !pl.samplerNoise.Reproducible()
}

// errPlanUsed is NewSession's error for a plan that already runs a session.
var errPlanUsed = errors.New("dptrain: the plan already runs a session: build a new plan for another run")

func init() {
	planparts.Of = func(p any) planparts.Pieces {
		pl := p.(*Plan)
		return planparts.Pieces{Sampler: pl.sampler, Optimizer: pl.opt, Noise: pl.streams.root, SamplerNoise: pl.samplerNoise, Live: pl.live}
	}
}
