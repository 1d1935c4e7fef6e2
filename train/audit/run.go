package audit

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"strings"

	"github.com/dptrain/dptrain/accounting"
	audit "github.com/dptrain/dptrain/accounting/audit"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/config"
)

// Verdict compares one accountant's ε with the audit's lower bound.
type Verdict struct {
	Mode    string           `json:"mode"`
	Label   accounting.Label `json:"label,omitempty"`
	Epsilon float64          `json:"epsilon"`
	Error   string           `json:"error,omitempty"`
	// Refuted is true when ε < ε_lower: at the audit's confidence, the run is not (ε, δ)-DP,
	// so this accountant's bound (or the implementation it accounts for) is wrong.
	Refuted bool   `json:"refuted"`
	Verdict string `json:"verdict"`
}

// MarshalJSON writes ε as null, with no label, when the accountant has no ε to test (Error is
// set): JSON has no NaN, and 0 would read as a bound the audit held.
func (v Verdict) MarshalJSON() ([]byte, error) {
	type plain Verdict
	out := struct {
		plain
		Epsilon *float64 `json:"epsilon"`
	}{plain: plain(v)}
	if v.Error == "" {
		out.Epsilon = &v.Epsilon
	} else {
		out.Label = ""
	}
	return json.Marshal(out)
}

// Report is an audit's outcome.
type Report struct {
	Threat    Threat `json:"threat"`
	Canaries  int    `json:"canaries"`
	Included  int    `json:"included"`
	Adjacency string `json:"adjacency"`
	// Support is the number of coordinates of a gradient canary and CanaryNorm its norm
	// before clipping (all-iterates only); a private step clips it to optimizer.clip_norm.
	Support    int     `json:"support,omitempty"`
	CanaryNorm float64 `json:"canary_norm,omitempty"`
	// Bound is ε_lower with its confidence, δ and the guesses that gave it.
	Bound   audit.Result   `json:"bound"`
	Modes   []Verdict      `json:"modes"`
	Summary *train.Summary `json:"run"`

	// The secret and the scores stay with the operator: they are not in the JSON.
	included []bool
	scores   []float64
}

// Refuted lists the accountants the audit refutes.
func (r *Report) Refuted() []string {
	var out []string
	for _, v := range r.Modes {
		if v.Refuted {
			out = append(out, v.Mode)
		}
	}
	return out
}

// Run trains cfg once with o.Canaries canaries, scores them, and returns ε_lower next to every
// accountant's ε. topts are the trainer's options; Run adds its canary hooks to them.
func Run(ctx context.Context, cfg *config.Config, o Options, topts train.Options) (*Report, error) {
	if err := o.resolve(cfg.Privacy.Release); err != nil {
		return nil, err
	}
	if topts.Resume {
		return nil, errors.New("audit: an audit is one fresh run: drop --resume and use a new output.dir")
	}
	rng, err := auditRand(cfg.Seed)
	if err != nil {
		return nil, err
	}
	// The secret S: each canary included independently with probability 1/2, drawn before
	// anything else is decided.
	m := o.Canaries
	included := make([]bool, m)
	nin := 0
	for i := range included {
		included[i] = rng.IntN(2) == 1
		if included[i] {
			nin++
		}
	}
	rep := &Report{Threat: o.Threat, Canaries: m, Included: nin}
	// Poisson sampling (with or without rejection) is stated for add/remove neighbours, the
	// fixed-size schemes for replace-one (optim's batch plan).
	sampling := data.Scheme(cfg.Optimizer.Sampling)
	poisson := sampling == data.SchemePoisson
	addRemove := poisson || sampling == data.SchemePoissonWithRejection
	rep.Adjacency = string(accounting.ReplaceOne)
	if addRemove {
		rep.Adjacency = string(accounting.AddRemove)
	}

	var (
		grad  *gradientCanaries
		input *inputCanaries
		base  *data.Split
	)
	switch o.Threat {
	case AllIterates:
		if !poisson {
			return nil, fmt.Errorf("audit: gradient canaries join batches as Poisson-sampled examples: set optimizer.sampling poisson, or audit the final model with --threat final-model")
		}
		// Every iterate is released: only accountants that cover that may be asked.
		cfg.Privacy.Release = "all-iterates"
		topts.TrainSplit = func(s *data.Split) (*data.Split, error) { base = s; return s, nil }
		// The canaries need the model's size, known once the trainer is built; the trainer
		// calls these only when training starts.
		topts.Oracle = func(in optim.GradientOracle) optim.GradientOracle { return grad.wrap(in) }
		topts.Hooks = append(append([]train.Hook(nil), topts.Hooks...), train.HookFunc(func(si *train.StepInfo) error { return grad.AfterStep(si) }))
	case FinalModel:
		input = &inputCanaries{included: included, replace: !addRemove, rng: rng}
		topts.TrainSplit = func(s *data.Split) (*data.Split, error) {
			return input.split(s)
		}
	}
	t, err := train.New(ctx, cfg, topts)
	if err != nil {
		if o.Threat == AllIterates && strings.Contains(err.Error(), "privacy.accountants") {
			return nil, fmt.Errorf("%w (the all-iterates audit releases every iterate: keep only composition accountants in privacy.accountants, e.g. --set 'privacy.accountants=[rdp]', or audit with --threat final-model)", err)
		}
		return nil, err
	}
	if o.Threat == AllIterates {
		s := max(o.Support, 1)
		usage, err := quietCoordinates(t.Model(), base)
		if err != nil {
			return nil, err
		}
		grad, err = newGradientCanaries(included, usage, s, CanaryNorm*cfg.Optimizer.ClipNorm, rng)
		if err != nil {
			return nil, err
		}
		grad.rate = float64(cfg.Optimizer.BatchSize) / float64(base.Len())
		grad.start(t.Model())
		rep.Support, rep.CanaryNorm = s, grad.norm
	}
	sum, err := t.Run(ctx)
	if err != nil {
		return nil, err
	}
	rep.Summary = sum
	var scores []float64
	if grad != nil {
		scores = grad.scores
	} else if scores, err = input.scores(t.Model()); err != nil {
		return nil, err
	}
	rep.included, rep.scores = included, scores
	delta := cfg.Privacy.Delta
	rep.Bound, err = audit.Bound(scores, included, o.Counts, delta, o.Confidence)
	if err != nil {
		return nil, err
	}
	rep.Modes = verdicts(sum.Epsilon, rep.Bound.Epsilon, o.Confidence)
	return rep, nil
}

// verdicts holds every accountant's ε against the lower bound: ε < ε_lower refutes it.
func verdicts(modes []train.ModeEpsilon, lower, confidence float64) []Verdict {
	out := make([]Verdict, 0, len(modes))
	for _, e := range modes {
		v := Verdict{Mode: e.Mode, Label: e.Label, Epsilon: e.Epsilon, Error: e.Error}
		if v.Error == "" && (math.IsNaN(e.Epsilon) || math.IsInf(e.Epsilon, 0)) {
			v.Error = fmt.Sprintf("ε is %v", e.Epsilon)
		}
		switch {
		case v.Error != "":
			v.Verdict = "no ε to test"
		case e.Epsilon < lower:
			v.Refuted = true
			v.Verdict = fmt.Sprintf("REFUTED: ε_lower %.4g > ε %.4g at %g%% confidence", lower, e.Epsilon, 100*confidence)
		default:
			v.Verdict = "not refuted"
		}
		out = append(out, v)
	}
	return out
}

// auditRand returns the audit's generator: derived from the config's seed (reproducible, so
// the audit's secret is known to anyone with the seed) or from crypto/rand.
func auditRand(seed *uint64) (*mrand.Rand, error) {
	var s [32]byte
	if seed != nil {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], *seed)
		s = sha256.Sum256(append([]byte("dptrain/train/audit canaries v1"), b[:]...))
	} else if _, err := rand.Read(s[:]); err != nil {
		return nil, fmt.Errorf("audit: reading a seed from crypto/rand: %w", err)
	}
	return mrand.New(mrand.NewChaCha8(s)), nil
}
