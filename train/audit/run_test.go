package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/algorithm/dpulr"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/rundir"
)

// small is a quick run on the synthetic mixture (4800 examples of 20 features).
const small = `
name: audit
seed: 5
data:
  dataset: synthetic-mixture
  normalize: none
model:
  kind: mlp
  hidden: [32]
  activation: tanh
optimizer:
  algorithm: dp-sgd
  update: sgd
  learning_rate: 0.5
  batch_size: 240
  sampling: poisson
  clip_norm: 1
  noise_multiplier: 1.0
privacy:
  delta: 1.0e-5
  accountants: [rdp]
training:
  steps: 200
  checkpoint_every: 0
`

func parse(t *testing.T, overrides ...string) *config.Config {
	t.Helper()
	cfg, err := config.ParseConfig([]byte(small), append(overrides, "output.dir="+t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func runAudit(t *testing.T, o Options, overrides ...string) *Report {
	t.Helper()
	rep, err := Run(context.Background(), parse(t, overrides...), o, train.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

var (
	nonPrivate = []string{"optimizer.algorithm=sgd", "optimizer.noise_multiplier=0", "privacy.accountants=[]"}
	// memorise: a small training set and a wide model, so that a non-private run fits its
	// out-of-distribution canaries.
	memorise = []string{"data.train_subset=800", "model.hidden=[128]", "optimizer.batch_size=50", "training.steps=1000"}
)

// The audit has power: a non-private run is detected, white-box and black-box. With m = 200
// canaries the largest possible bound (every guess right with k₊ = k₋ = 40, the confidence
// split over 6 counts) is 2.77.
func TestAuditPowerNonPrivate(t *testing.T) {
	for _, c := range []struct {
		name      string
		threat    Threat
		overrides []string
		atLeast   float64
	}{
		{"all-iterates", AllIterates, nonPrivate, 2.5},
		{"final-model", FinalModel, append(append([]string(nil), nonPrivate...), memorise...), 1.2},
	} {
		rep := runAudit(t, Options{Canaries: 200, Threat: c.threat}, c.overrides...)
		if rep.Bound.Epsilon < c.atLeast {
			t.Errorf("%s, σ = 0: ε_lower = %.3f (%+v), want ≥ %g", c.name, rep.Bound.Epsilon, rep.Bound.Best, c.atLeast)
		}
		if len(rep.Modes) != 0 {
			t.Errorf("%s: a non-private run has no accountant, got %+v", c.name, rep.Modes)
		}
	}
}

// With large noise the canaries are hidden: ε_lower is small, and below the accountant's ε.
func TestAuditLargeNoise(t *testing.T) {
	for _, c := range []struct {
		name      string
		threat    Threat
		overrides []string
	}{
		{"all-iterates", AllIterates, []string{"optimizer.noise_multiplier=20", "optimizer.learning_rate=0.05"}},
		{"final-model", FinalModel, append([]string{"optimizer.noise_multiplier=20", "optimizer.learning_rate=0.05"}, memorise...)},
	} {
		rep := runAudit(t, Options{Canaries: 200, Threat: c.threat}, c.overrides...)
		if rep.Bound.Epsilon > 0.5 {
			t.Errorf("%s, σ = 20: ε_lower = %.3f (%+v), want ≤ 0.5", c.name, rep.Bound.Epsilon, rep.Bound.Best)
		}
		if len(rep.Modes) != 1 || rep.Modes[0].Refuted || rep.Modes[0].Epsilon <= 0 {
			t.Errorf("%s: verdicts %+v, want rdp with a positive ε, not refuted", c.name, rep.Modes)
		}
	}
}

var modelMix = []string{"optimizer.algorithm=modelmix", "optimizer.modelmix.gap=0.01", "optimizer.modelmix.linf_parts=4", "privacy.accountants=[modelmix,rdp]", "training.steps=20"}

// A ModelMix run with l2+l∞ clipping is audited with canaries spread over p coordinates.
func TestAuditModelMixSupport(t *testing.T) {
	rep := runAudit(t, Options{Canaries: 50, Threat: AllIterates, Support: 4}, modelMix...)
	if rep.Support != 4 || len(rep.Modes) != 2 || rep.Modes[0].Mode != "modelmix" {
		t.Errorf("report %+v", rep)
	}
}

func TestVerdicts(t *testing.T) {
	modes := []train.ModeEpsilon{
		{Mode: "low", Label: "paper", Epsilon: 0.5},
		{Mode: "high", Label: "certified", Epsilon: 3},
		{Mode: "none", Error: "does not cover the run"},
		{Mode: "refused", Label: "certified", Epsilon: math.NaN(), Error: "refused the record after step 0"},
		{Mode: "nan", Label: "paper", Epsilon: math.NaN()},
	}
	v := verdicts(modes, 1.2, 0.95)
	if !v[0].Refuted || !strings.HasPrefix(v[0].Verdict, "REFUTED") {
		t.Errorf("ε 0.5 < ε_lower 1.2: %+v", v[0])
	}
	if v[1].Refuted || v[1].Verdict != "not refuted" {
		t.Errorf("ε 3 ≥ ε_lower 1.2: %+v", v[1])
	}
	// An accountant without an ε is neither refuted nor held, and its ε is null in the JSON
	// (which has no NaN), with no label.
	for _, w := range v[2:] {
		if w.Refuted || w.Verdict != "no ε to test" || w.Error == "" {
			t.Errorf("%s: verdict %+v, want no ε to test", w.Mode, w)
		}
		b, err := json.Marshal(w)
		if err != nil {
			t.Fatalf("%s: %v", w.Mode, err)
		}
		var got map[string]any
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if e, ok := got["epsilon"]; !ok || e != nil || got["label"] != nil {
			t.Errorf("%s: JSON %s, want epsilon null and no label", w.Mode, b)
		}
	}
	if b, err := json.Marshal(v[1]); err != nil || !strings.Contains(string(b), `"epsilon":3`) {
		t.Errorf("JSON %s (%v), want epsilon 3", b, err)
	}
}

func TestAuditErrors(t *testing.T) {
	for _, c := range []struct {
		name      string
		o         Options
		overrides []string
		want      string
	}{
		{"gradient canaries need Poisson", Options{Canaries: 50, Threat: AllIterates}, []string{"optimizer.sampling=shuffled"}, "optimizer.sampling poisson"},
		{"hidden-state accountant on all iterates", Options{Canaries: 50, Threat: AllIterates}, []string{"privacy.accountants=[rdp,chien-li]"}, "composition accountants"},
		{"too few canaries", Options{Canaries: 1}, nil, "--canaries"},
		{"unknown threat", Options{Canaries: 50, Threat: "grey-box"}, nil, "--threat"},
		{"too many input canaries", Options{Canaries: 1500, Threat: FinalModel}, nil, "--canaries"},
		{"too many gradient canaries", Options{Canaries: 1000, Threat: AllIterates}, nil, "--canaries"},
		{"l∞ clipping truncates a Dirac canary", Options{Canaries: 50, Threat: AllIterates}, modelMix, "--canary-support 4"},
	} {
		_, err := Run(context.Background(), parse(t, c.overrides...), c.o, train.Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %q", c.name, err, c.want)
		}
	}
}

// A DP-SGLD run (replace-one neighbours, fixed-size batches) is audited against the final
// model with n unchanged, next to its hidden-state accountant (label paper).
func TestAuditDPSGLDFinalModel(t *testing.T) {
	rep := runAudit(t, Options{Canaries: 100, Threat: FinalModel}, "optimizer.algorithm=dp-sgld", "model.kind=logreg",
		"data.feature_norm=1", "optimizer.sampling=without-replacement", "optimizer.noise_multiplier=0.02",
		"optimizer.dp_sgld.regularization=0.001", "optimizer.learning_rate=0.5", "privacy.accountants=[sgld,rdp]")
	if rep.Adjacency != "replace-one" || rep.Summary.DatasetSize != 4800 || len(rep.Modes) != 2 || rep.Modes[0].Label != "paper" {
		t.Errorf("adjacency %s, n = %d, modes %+v", rep.Adjacency, rep.Summary.DatasetSize, rep.Modes)
	}
}

// dpULR runs DP-ULR (forward passes only) on the small config; mode is appended by the test.
var dpULR = []string{"optimizer.algorithm=dp-ulr", "optimizer.update=adam", "optimizer.learning_rate=0.01",
	"optimizer.sampling=poisson-with-rejection", "optimizer.min_batch_size=120", "privacy.accountants=[ulr,rdp]",
	"training.steps=20"}

// DP-ULR is audited against the final model in both modes: its input canaries are sampled
// with rejection like any example, the step gets the model's forward-only access, and ulr's ε
// carries the mode's label (the final-model audit sets no oracle wrapper: the step sees the
// models.Network itself, and DP-ULR's step fails on any model without forward-only access).
// Against all iterates it is refused before training: its Poisson batches with rejection are
// not the plain Poisson batches gradient canaries join, and its step forms no gradient sum.
func TestAuditDPULR(t *testing.T) {
	for _, c := range []struct {
		mode   string
		threat Threat
		label  accounting.Label
		err    string
	}{
		{"paper", FinalModel, accounting.Paper, ""},
		{"certified", FinalModel, accounting.Certified, ""},
		{"certified", AllIterates, "", "--threat final-model"},
	} {
		overrides := append(append([]string(nil), dpULR...), "optimizer.dp_ulr.mode="+c.mode)
		if c.mode == "certified" {
			overrides = append(overrides, "optimizer.dp_ulr.sigma=1")
		}
		if c.threat == AllIterates {
			overrides = append(overrides, "privacy.accountants=[rdp]")
		}
		rep, err := Run(context.Background(), parse(t, overrides...), Options{Canaries: 100, Threat: c.threat}, train.Options{})
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s, %s: error %v, want one naming %q", c.mode, c.threat, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s, %s: %v", c.mode, c.threat, err)
		}
		if rep.Adjacency != "add-remove" || rep.Summary.Steps != 20 || len(rep.Modes) != 2 ||
			rep.Modes[0].Mode != "ulr" || rep.Modes[0].Label != c.label || !(rep.Modes[0].Epsilon > 0) {
			t.Errorf("%s: adjacency %s, %d steps, modes %+v; want add-remove, 20 steps, ulr labelled %s first",
				c.mode, rep.Adjacency, rep.Summary.Steps, rep.Modes, c.label)
		}
	}
}

// The all-iterates wrapper shows the step only the gradient sums, so a forward-only step
// (DP-ULR's) cannot run without its canaries; and a step that takes no gradient sum from the
// wrapper fails the audit instead of leaving its canaries out unnoticed.
func TestGradientCanariesNeedTheGradientSum(t *testing.T) {
	nw, err := models.New(models.Spec{Kind: "mlp", Input: []int{5}, Classes: 3, Hidden: []int{4}, Activation: "tanh"}, rand.New(rand.NewPCG(6, 6)))
	if err != nil {
		t.Fatal(err)
	}
	g, err := newGradientCanaries(make([]bool, 4), make([]float64, len(nw.Params())), 1, 1, rand.New(rand.NewPCG(7, 7)))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.wrap(nw).(dpulr.ForwardOracle); ok {
		t.Error("the wrapped network offers forward-only access, which no canary joins")
	}
	g.start(nw)
	for _, c := range []struct {
		name   string
		inject bool
		batch  int
		err    string
	}{
		{"gradient sum taken", true, 10, ""},
		{"empty batch", false, 0, ""},
		{"no gradient sum", false, 10, "--threat final-model"},
	} {
		if c.inject {
			if err := g.inject(make([]float32, len(nw.Params())), func([]float32) error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
		err := g.AfterStep(&train.StepInfo{Step: 1, BatchSize: c.batch, LearningRate: 0.1})
		if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.err)
		}
	}
}

// DP-MBCD (replace-one, shuffle-once) is audited against the final model: n stays 4800, the
// paper-labelled mbcd reports ε, mbcd-certified's refusal of a second block is "no ε to test"
// (null in audit.json), and the lifted network keeps hidden auxiliaries for every index of the
// audited split, the canaries' slots among them, each canary its own.
func TestAuditDPMBCDFinalModel(t *testing.T) {
	const m, n, hidden = 100, 4800, 32
	cfg := parse(t, "optimizer.algorithm=dp-mbcd", "optimizer.update=sgd", "model.activation=relu", "model.bias=false",
		"optimizer.sampling=shuffled-once", "optimizer.batch_size=480", "optimizer.noise_multiplier=50",
		"privacy.accountants=[mbcd,mbcd-certified]", "training.steps=10") // one epoch: every example visited
	rep, err := Run(context.Background(), cfg, Options{Canaries: m, Threat: FinalModel}, train.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Adjacency != "replace-one" || rep.Summary.DatasetSize != n || len(rep.Modes) != 2 ||
		rep.Modes[0].Label != accounting.Paper || !(rep.Modes[0].Epsilon > 0) || rep.Modes[1].Verdict != "no ε to test" {
		t.Fatalf("adjacency %s, n = %d, modes %+v", rep.Adjacency, rep.Summary.DatasetSize, rep.Modes)
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Errorf("audit.json: %v", err)
	}
	ck, err := rundir.LoadCheckpoint(rundir.PrivatePath(cfg.Output.Dir, rundir.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	aux, visited := ck.Vectors["optim/auxiliaries"], ck.Vectors["optim/visited"]
	per := 2 * hidden // u_0 and x_1 per example
	if len(visited) != n || len(aux) != n*per {
		t.Fatalf("%d visited flags and %d auxiliaries, want %d and %d", len(visited), len(aux), n, n*per)
	}
	rows := map[string]int{}
	for j := n - m; j < n; j++ {
		row := aux[j*per : (j+1)*per]
		if visited[j] != 1 || optim.Norm2(row) == 0 || math.IsNaN(optim.Norm2(row)) {
			t.Fatalf("canary slot %d: visited %v, auxiliaries of norm %v", j, visited[j], optim.Norm2(row))
		}
		key := fmt.Sprint(row)
		if i, ok := rows[key]; ok {
			t.Fatalf("canary slots %d and %d share their auxiliaries", i, j)
		}
		rows[key] = j
	}
}
