package train

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/rdp"
	"github.com/dptrain/dptrain/accounting/ulr"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/rundir"
)

// synthetic is a small run on the synthetic mixture (4800 examples of 20 features), fast
// enough for unit tests (testdata/synthetic.yaml, which the config package's tests read too).
var synthetic = readTestdata("synthetic.yaml")

// minimal is the smallest valid config (testdata/minimal.yaml).
var minimal = readTestdata("minimal.yaml")

// readTestdata returns the text of testdata/name.
func readTestdata(name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		panic(err)
	}
	return string(b)
}

func newTrainer(t *testing.T, overrides ...string) (*Trainer, *config.Config) {
	t.Helper()
	overrides = append(overrides, "output.dir="+t.TempDir())
	cfg, err := config.ParseConfig([]byte(synthetic), overrides)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tr, cfg
}

func TestTrainLearnsAndReportsEpsilon(t *testing.T) {
	tr, _ := newTrainer(t)
	sum, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 30 || sum.TestAccuracy < 0.5 {
		t.Errorf("steps %d, accuracy %v: want 30 steps and well above chance (0.2)", sum.Steps, sum.TestAccuracy)
	}
	// ε must equal an independent RDP computation of 30 Poisson steps with q = 240/4800, σ = 1.
	a, _ := rdp.New(accounting.Run{})
	a.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: 1, SampleRate: 0.05, Count: 30})
	want, _ := a.Epsilon(1e-5)
	if len(sum.Epsilon) != 1 || math.Abs(sum.Epsilon[0].Epsilon-want.Epsilon) > 1e-12 || sum.Epsilon[0].Label != accounting.Certified {
		t.Errorf("ε %+v, want %v certified", sum.Epsilon, want.Epsilon)
	}
	if _, err := models.Load(sum.ModelFile); err != nil {
		t.Errorf("final model does not load: %v", err)
	}
}

func TestStopsBeforeTarget(t *testing.T) {
	tr, cfg := newTrainer(t, "privacy.target_epsilon=4", "training.steps=400")
	sum, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps == 0 || sum.Steps >= 400 || sum.StoppedEarly == "" {
		t.Fatalf("ran %d steps (stopped: %q), want an early stop", sum.Steps, sum.StoppedEarly)
	}
	eps := func(steps int) float64 {
		a, _ := rdp.New(accounting.Run{})
		a.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: 1, SampleRate: 0.05, Count: steps})
		g, _ := a.Epsilon(cfg.Privacy.Delta)
		return g.Epsilon
	}
	if e := eps(sum.Steps); e > 4 {
		t.Errorf("ε after %d steps = %v exceeds the target", sum.Steps, e)
	}
	if e := eps(sum.Steps + 1); e <= 4 {
		t.Errorf("stopped at %d steps though one more gives ε = %v ≤ target", sum.Steps, e)
	}
}

func TestAutoNoiseMeetsTarget(t *testing.T) {
	tr, _ := newTrainer(t, "privacy.target_epsilon=2", "optimizer.noise_multiplier=auto", "training.steps=50")
	sum, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 50 || sum.Epsilon[0].Epsilon > 2 || sum.Epsilon[0].Epsilon < 1.99 {
		t.Errorf("calibrated run: %d steps, ε = %v (σ = %v), want 50 steps at ε just below 2", sum.Steps, sum.Epsilon[0].Epsilon, sum.NoiseMultiplier)
	}
}

var errCrash = errors.New("simulated crash")

// A crash after step 15 leaves the step-10 checkpoint; resuming continues from step 10 with
// the privacy ledger replayed, and ends where an uninterrupted run ends (with a seed,
// bit-identical parameters), but its ε counts the 5 steps run after the checkpoint too: they
// were executed on the data (35 steps in all).
func TestResumeContinuesLedger(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + dir})
	if err != nil {
		t.Fatal(err)
	}
	crash := HookFunc(func(s *StepInfo) error {
		if s.Step == 15 {
			return errCrash
		}
		return nil
	})
	tr, err := New(context.Background(), cfg, Options{Hooks: []Hook{crash}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); !errors.Is(err, errCrash) {
		t.Fatalf("error %v, want the simulated crash", err)
	}
	ck, err := rundir.LoadCheckpoint(rundir.PrivatePath(dir, rundir.CheckpointFile))
	if err != nil || ck.Header.Step != 10 {
		t.Fatalf("checkpoint after crash: %v, step %d; want step 10", err, ck.Header.Step)
	}
	// Refused before the data are read.
	if _, err := New(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("a second run into the same directory without --resume: %v, want a refusal naming --resume", err)
	}
	res, _ := New(context.Background(), cfg, Options{Resume: true})
	sum, err := res.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := newTrainer(t)
	want, err := ref.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Model().Params(), ref.Model().Params()) {
		t.Error("the resumed seeded run's parameters differ from the uninterrupted run's")
	}
	ref35, _ := newTrainer(t, "training.steps=35")
	want35, err := ref35.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 30 || math.Abs(sum.Epsilon[0].Epsilon-want35.Epsilon[0].Epsilon) > 1e-12 || !(sum.Epsilon[0].Epsilon > want.Epsilon[0].Epsilon) {
		t.Errorf("resumed run: %d steps, ε = %v; want 30 steps and ε of 35 steps, %v (30 steps: %v)", sum.Steps, sum.Epsilon[0].Epsilon, want35.Epsilon[0].Epsilon, want.Epsilon[0].Epsilon)
	}
	ck, _ = rundir.LoadCheckpoint(rundir.PrivatePath(dir, rundir.CheckpointFile))
	if n := ck.Header.Ledger[0].Count; len(ck.Header.Ledger) != 1 || n != 35 {
		t.Errorf("ledger %+v, want one run of 35 steps", ck.Header.Ledger)
	}

	// A changed config is refused.
	other, _ := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + dir, "optimizer.clip_norm=2"})
	tr2, _ := New(context.Background(), other, Options{Resume: true})
	if _, err := tr2.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "different config") {
		t.Errorf("resume with another config: %v", err)
	}
}

func TestSeedReproducible(t *testing.T) {
	run := func() []float32 {
		tr, _ := newTrainer(t, "training.steps=5")
		if _, err := tr.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return slices.Clone(tr.Model().Params())
	}
	if !slices.Equal(run(), run()) {
		t.Error("two runs with the same seed differ")
	}
}

// TestDivergenceStopsWithCheckpointKept: η = 1e38 overflows float32 parameters within two steps
// (the row-local loss head keeps logits of 1e30 finite, so a smaller η no longer diverges).
func TestDivergenceStopsWithCheckpointKept(t *testing.T) {
	tr, cfg := newTrainer(t, "optimizer.learning_rate=1e38", "optimizer.clip_norm=1e30", "optimizer.noise_multiplier=1e-30", "training.checkpoint_every=1")
	_, err := tr.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "step") {
		t.Fatalf("error %v, want a divergence error naming the step", err)
	}
	if !strings.Contains(err.Error(), "checkpoint") {
		t.Errorf("error %q does not point at the last good checkpoint", err)
	}
	if ck, err := rundir.LoadCheckpoint(rundir.PrivatePath(cfg.Output.Dir, rundir.CheckpointFile)); err == nil {
		if !finite(ck.Vectors["params"]) {
			t.Error("the kept checkpoint holds non-finite parameters")
		}
	}
}

func TestInapplicableAccountantRefusedBeforeTraining(t *testing.T) {
	cfg, _ := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + t.TempDir(), "privacy.accountants=[sgld]"})
	if _, err := New(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), "sgld") {
		t.Errorf("sgld on a momentum MLP run: %v, want a refusal naming it", err)
	}
	cfg, _ = config.ParseConfig([]byte(synthetic), []string{"output.dir=" + t.TempDir(), "privacy.target_epsilon=0.0001", "optimizer.noise_multiplier=auto", "training.steps=100000"})
	if _, err := New(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("impossible target: %v", err)
	}
}

// killAndResume trains cfg (with the algorithms of reg, nil: config.Builtin) until a hook kills it
// after step `at`, resumes it from its last checkpoint to the end, and returns the resumed
// trainer and its summary.
func killAndResume(t *testing.T, cfg *config.Config, reg *config.Algorithms, at int) (*Trainer, *Summary) {
	t.Helper()
	kill := HookFunc(func(s *StepInfo) error {
		if s.Step == at {
			return errCrash
		}
		return nil
	})
	tr, err := New(context.Background(), cfg, Options{Algorithms: reg, Hooks: []Hook{kill}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); !errors.Is(err, errCrash) {
		t.Fatalf("error %v, want the simulated kill", err)
	}
	return resumeRun(t, cfg, reg)
}

// interruptAndResume is killAndResume with the run interrupted (its context cancelled, as
// SIGINT and SIGTERM do) after step `at`: it checkpoints there, so no step is abandoned.
func interruptAndResume(t *testing.T, cfg *config.Config, reg *config.Algorithms, at int) (*Trainer, *Summary) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := HookFunc(func(s *StepInfo) error {
		if s.Step == at {
			cancel()
		}
		return nil
	})
	tr, err := New(ctx, cfg, Options{Algorithms: reg, Hooks: []Hook{stop}})
	if err != nil {
		t.Fatal(err)
	}
	if sum, err := tr.Run(ctx); err != nil || !sum.Interrupted || sum.Steps != at {
		t.Fatalf("interrupted run: %v, want it to stop after step %d", err, at)
	}
	return resumeRun(t, cfg, reg)
}

// expand lists a run-length ledger one record per step.
func expand(ledger []accounting.Step) []accounting.Step {
	var out []accounting.Step
	for _, r := range ledger {
		for range r.Steps() {
			r1 := r
			r1.Count = 1
			out = append(out, r1)
		}
	}
	return out
}

func firstDiff(a, b []accounting.Step) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// A seeded run killed after step 26, past its step-21 checkpoint (mid-epoch: 20 batches per
// epoch), and resumed ends bit-identical to an uninterrupted run; for shuffle-once the stored
// partition continues the same cyclic order (batch indices 1, 2, ... after 21). The steps the
// kill lost are not given back: the ledger holds them too.
func TestKilledAndResumedIsBitIdentical(t *testing.T) {
	for _, scheme := range []string{"shuffled-once", "shuffled", "without-replacement", "poisson"} {
		t.Run(scheme, func(t *testing.T) {
			// No accountant covers the shuffled schemes for this non-convex run: opt in.
			over := []string{"optimizer.sampling=" + scheme, "training.checkpoint_every=7", "training.steps=45", "privacy.allow_no_guarantee=true"}
			cfg, err := config.ParseConfig([]byte(synthetic), append(over, "output.dir="+t.TempDir()))
			if err != nil {
				t.Fatal(err)
			}
			res, _ := killAndResume(t, cfg, nil, 26)
			ref, _ := newTrainer(t, over...)
			if _, err := ref.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Model().Params(), ref.Model().Params()) {
				t.Error("the resumed run's parameters differ from the uninterrupted run's")
			}
			// The ledger holds the 26 steps of the killed branch, then the resumed branch's
			// steps 22 to 45: steps 22 to 26 ran twice and count twice.
			got, ran := expand(res.live.Ledger()), expand(ref.live.Ledger())
			want := append(slices.Clone(ran[:26]), ran[21:]...)
			if !slices.Equal(got, want) {
				t.Errorf("ledger after resume: %d records, want %d (26 of the killed branch, then steps 22 to 45); first difference at %d", len(got), len(want), firstDiff(got, want))
			}
		})
	}
}

// Poisson sampling with rejection runs end to end from min_batch_size: every batch reaches the
// threshold, the records declare the scheme and N_B, and an accountant that does not cover the
// scheme reports why instead of a number (and auto calibration is refused).
func TestPoissonWithRejectionEndToEnd(t *testing.T) {
	var sizes []int
	hook := HookFunc(func(s *StepInfo) error { sizes = append(sizes, s.BatchSize); return nil })
	cfg, err := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + t.TempDir(), "optimizer.sampling=poisson-with-rejection",
		"optimizer.min_batch_size=235", "training.steps=20", "privacy.allow_no_guarantee=true"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(context.Background(), cfg, Options{Hooks: []Hook{hook}})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 20 || slices.Min(sizes) < 235 {
		t.Errorf("batch sizes %v: want 20 batches of at least 235", sizes)
	}
	want := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.PoissonWithRejection, Neighbouring: accounting.AddRemove,
		NoiseMultiplier: 1, SampleRate: 0.05, Count: 20, Sensitivity: 1, NoiseStd: 1, StepSize: 0.2, DatasetSize: 4800, MinBatchSize: 235}
	if l := tr.live.Ledger(); len(l) != 1 || l[0] != want {
		t.Errorf("ledger %+v, want %+v", l, want)
	}
	if e := sum.Epsilon[0]; e.Error == "" || !math.IsNaN(e.Epsilon) {
		t.Errorf("rdp on a rejection-sampled run: %+v, want a refusal, not a number", e)
	}

	for _, tc := range []struct {
		over []string
		want string
	}{
		{[]string{"optimizer.sampling=poisson-with-rejection", "optimizer.min_batch_size=-1"}, "min_batch_size"},
		{[]string{"optimizer.min_batch_size=10"}, "min_batch_size is set"},
	} {
		if _, err := config.ParseConfig([]byte(synthetic), tc.over); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %q", tc.over, err, tc.want)
		}
	}
	auto, _ := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + t.TempDir(), "optimizer.sampling=poisson-with-rejection",
		"optimizer.min_batch_size=235", "optimizer.noise_multiplier=auto", "privacy.target_epsilon=2"})
	if _, err := New(context.Background(), auto, Options{}); err == nil || !strings.Contains(err.Error(), "covers this run") {
		t.Errorf("auto with an uncovered scheme: %v, want a refusal", err)
	}
}

// An unset min_batch_size under poisson-with-rejection defaults to the largest N_B whose
// rejection term is ≤ 1e-10 per step (seed-002 §3.6): the sampler, the ledger and the log use it.
func TestPoissonWithRejectionDefaultMinBatch(t *testing.T) {
	var sizes []int
	hook := HookFunc(func(s *StepInfo) error { sizes = append(sizes, s.BatchSize); return nil })
	cfg, err := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + t.TempDir(), "optimizer.sampling=poisson-with-rejection",
		"training.steps=5", "privacy.accountants=[ulr]"})
	if err != nil {
		t.Fatal(err)
	}
	log, out := logrus.New(), new(bytes.Buffer)
	log.SetOutput(out)
	tr, err := New(context.Background(), cfg, Options{Hooks: []Hook{hook}, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want, _, err := ulr.DefaultMinBatchSize(0.05, 4799, ulr.DefaultRejectionBound)
	if err != nil {
		t.Fatal(err)
	}
	if l := tr.live.Ledger(); len(l) != 1 || l[0].MinBatchSize != want || want < 1 || want >= 240 {
		t.Errorf("ledger %+v, want MinBatchSize %d in [1, 240)", l, want)
	}
	if slices.Min(sizes) < want {
		t.Errorf("batch sizes %v below the default N_B = %d", sizes, want)
	}
	if !strings.Contains(out.String(), fmt.Sprintf("N_B = %d", want)) {
		t.Errorf("log does not state the default N_B = %d:\n%s", want, out.String())
	}
}

// countingOracle counts the private steps that went through it.
type countingOracle struct {
	optim.GradientOracle
	calls *int
}

func (c countingOracle) ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error) {
	*c.calls++
	return c.GradientOracle.ClippedGradSum(b, clip, grad, norms)
}

// Options.TrainSplit replaces the training data before the sampler is built (n follows it), and
// Options.Oracle sees every private step's gradient sum.
func TestOptionsTrainSplitAndOracle(t *testing.T) {
	cfg, err := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + t.TempDir(), "training.steps=5"})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	opts := Options{
		TrainSplit: func(s *data.Split) (*data.Split, error) { return s.Head(1000), nil },
		Oracle:     func(in optim.GradientOracle) optim.GradientOracle { return countingOracle{in, &calls} },
	}
	tr, err := New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.DatasetSize != 1000 || calls != 5 {
		t.Errorf("dataset size %d, oracle calls %d: want 1000 and 5", sum.DatasetSize, calls)
	}
	opts.TrainSplit = func(*data.Split) (*data.Split, error) { return nil, errors.New("no split today") }
	cfg.Output.Dir = t.TempDir()
	if _, err := New(context.Background(), cfg, opts); err == nil || !strings.Contains(err.Error(), "no split today") {
		t.Errorf("a failing TrainSplit gave %v", err)
	}
}

// resumeRun resumes cfg's run to its end.
func resumeRun(t *testing.T, cfg *config.Config, reg *config.Algorithms) (*Trainer, *Summary) {
	t.Helper()
	res, err := New(context.Background(), cfg, Options{Algorithms: reg, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := res.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return res, sum
}
