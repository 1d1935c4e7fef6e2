package train

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modes"
	"github.com/dptrain/dptrain/algorithm"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
	"github.com/dptrain/dptrain/train/config"
)

// toyGD is an algorithm that exists only in this file: noisy clipped gradient descent on
// Poisson batches whose noise std is σ·C/√2 (so its records' noise multiplier is σ/√2, not σ:
// calibrating it as DP-SGD would under-report ε), with its step size scaled by the section's
// "scale". With "blocks: m" it declares m records per step, one per block (as DP-MBCD
// does), each with the whole step's noise multiplier: a conservative multi-record step.
type toyGD struct {
	sigma, clip, lr float64
	blocks          int
	seen            func(data.Batch) error
	noise           *optim.Noise
	grad            []float32
	norms           []float64
	k               int
}

func (o *toyGD) record(info data.BatchInfo) []accounting.Step {
	var recs []accounting.Step
	for j := range max(o.blocks, 1) {
		recs = append(recs, accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Sampling(info.Scheme()), Neighbouring: accounting.AddRemove,
			SampleRate: info.SampleRate(), NoiseMultiplier: o.sigma / math.Sqrt2, Sensitivity: o.clip,
			NoiseStd: o.sigma * o.clip / math.Sqrt2, StepSize: o.lr, BatchSize: info.BatchSize(), DatasetSize: info.DatasetSize(), Count: 1, Block: j})
	}
	return recs
}

func (o *toyGD) NoiseStream() *optim.Noise { return o.noise }

func (o *toyGD) Declare(info data.BatchInfo) ([]accounting.Step, error) { return o.record(info), nil }

func (o *toyGD) DeclareStep(_ int, info data.BatchInfo) ([]accounting.Step, error) {
	return o.record(info), nil
}

func (o *toyGD) Step(m optim.GradientOracle, b data.Batch, info data.BatchInfo) (optim.Result, error) {
	if o.seen != nil {
		if err := o.seen(b); err != nil {
			return optim.Result{}, err
		}
	}
	p := m.Params()
	if len(o.grad) != len(p) {
		o.grad = make([]float32, len(p))
	}
	clear(o.grad)
	o.norms = make([]float64, b.N)
	var st data.Stats
	if b.N > 0 {
		var err error
		if st, err = m.ClippedGradSum(b, o.clip, o.grad, o.norms); err != nil {
			return optim.Result{}, err
		}
	}
	o.noise.AddGaussian(o.grad, o.sigma*o.clip/math.Sqrt2)
	norm := info.SampleRate() * float64(info.DatasetSize())
	for i := range p {
		p[i] -= float32(o.lr * float64(o.grad[i]) / norm)
	}
	o.k++
	return optim.Result{Records: o.record(info), Stats: st, StepSize: o.lr}, nil
}

func (o *toyGD) UpdateRule() string { return "sgd" }
func (o *toyGD) Stateful() bool     { return false }
func (o *toyGD) Steps() int         { return o.k }

func (o *toyGD) State() (map[string][]float32, map[string]float64) {
	return nil, map[string]float64{"steps": float64(o.k)}
}

func (o *toyGD) Restore(_ map[string][]float32, s map[string]float64) error {
	o.k = int(s["steps"])
	return nil
}

// silent is an optimizer that does not declare its records.
type silent struct{ optim.Optimizer }

type toySection struct {
	Scale  float64 `yaml:"scale"`
	Blocks int     `yaml:"blocks"`
}

func toyAlgorithm(name string, declares bool) algorithm.Algorithm {
	return toyObserved(name, declares, nil)
}

// toyObserved is the toy algorithm with seen called on every batch before its step.
func toyObserved(name string, declares bool, seen func(data.Batch) error) algorithm.Algorithm {
	return algorithm.Algorithm{
		Name: name, Private: true, ClipNorm: true,
		Accountants: []string{"rdp"},
		Section:     name, NewSection: func() any { return &toySection{Scale: 1} },
		Validate: func(_ algorithm.Config, s any) []error {
			if err := algorithm.Positive("optimizer."+name+".scale", s.(*toySection).Scale); err != nil {
				return []error{err}
			}
			return nil
		},
		Prepare: func(e algorithm.Env) (algorithm.Plan, error) {
			o, s := e.Config.Optimizer, e.Section.(*toySection)
			return algorithm.Plan{
				Run: accounting.Run{DatasetSize: e.DatasetSize, Convexity: accounting.NonConvex, Lipschitz: o.ClipNorm},
				NewOptimizer: func(sigma float64, noise *optim.Noise) (optim.Optimizer, error) {
					t := &toyGD{sigma: sigma, clip: o.ClipNorm, lr: o.LearningRate * s.Scale, blocks: s.Blocks, seen: seen, noise: noise}
					if !declares {
						return silent{t}, nil
					}
					return t, nil
				},
			}, nil
		},
	}
}

const toyConfig = `
name: toy
seed: 5
data:
  dataset: synthetic-mixture
  normalize: none
model:
  kind: mlp
  hidden: [16]
optimizer:
  algorithm: toy-gd
  learning_rate: 0.1
  batch_size: 240
  clip_norm: 1
  noise_multiplier: auto
  toy-gd:
    scale: 2
privacy:
  delta: 1.0e-5
  target_epsilon: 2
training:
  steps: 30
  checkpoint_every: 10
`

// TestToyAlgorithmRegisteredFromTestFile registers an algorithm in this file only, trains it
// end to end from a config (σ calibrated with auto through its own declarer), crashes it,
// resumes it from the checkpoint, and checks the resumed run equals an uninterrupted one.
func TestToyAlgorithmRegisteredFromTestFile(t *testing.T) {
	reg := config.Builtin()
	for _, a := range []algorithm.Algorithm{toyAlgorithm("toy-gd", true), toyAlgorithm("toy-silent", false)} {
		if err := reg.Register(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := reg.Register(toyAlgorithm("toy-gd", true)); err == nil {
		t.Error("registering a name twice was accepted")
	}
	if _, err := config.ParseConfig([]byte(toyConfig), nil); err == nil || !strings.Contains(err.Error(), "toy-gd") {
		t.Errorf("the builtin registry accepted the toy: %v", err)
	}
	if _, err := reg.ParseConfig([]byte(toyConfig), []string{"optimizer.toy-gd.scale=-1"}); err == nil || !strings.Contains(err.Error(), "optimizer.toy-gd.scale = -1") {
		t.Errorf("the toy's own validation did not run: %v", err)
	}
	if _, err := reg.ParseConfig([]byte(toyConfig), []string{"optimizer.toy-gd.scal=1"}); err == nil || !strings.Contains(err.Error(), "unknown key optimizer.toy-gd.scal: did you mean optimizer.toy-gd.scale?") {
		t.Errorf("a typo in the toy's section was accepted: %v", err)
	}

	cfg, err := reg.ParseConfig([]byte(toyConfig), []string{"output.dir=" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(context.Background(), cfg, Options{Algorithms: reg})
	if err != nil {
		t.Fatal(err)
	}
	// The toy's records carry σ/√2: calibrated through its own declarer, σ is √2 times the
	// σ that a DP-SGD record of the same run needs.
	run := accounting.Run{DatasetSize: 4800, Convexity: accounting.NonConvex, Lipschitz: 1, UpdateRule: "sgd", LastIterateOnly: true}
	dpsgd, _, err := accounting.CalibrateStep(context.Background(), func() (accounting.Accountant, error) { return modes.New("rdp", run) },
		accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, SampleRate: 0.05, Sensitivity: 1, Count: 30}, 2, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.NoiseMultiplier(); math.Abs(got/(math.Sqrt2*dpsgd)-1) > 2e-4 {
		t.Errorf("calibrated σ = %v, want √2·%v = %v (the toy's own declarer)", got, dpsgd, math.Sqrt2*dpsgd)
	}
	tr.Close() // prepared only: the run itself is below
	res, sum := interruptAndResume(t, cfg, reg, 25)
	refCfg, _ := reg.ParseConfig([]byte(toyConfig), []string{"output.dir=" + t.TempDir()})
	ref, err := New(context.Background(), refCfg, Options{Algorithms: reg})
	if err != nil {
		t.Fatal(err)
	}
	want, err := ref.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Model().Params(), ref.Model().Params()) {
		t.Error("the resumed toy run's parameters differ from the uninterrupted run's")
	}
	if sum.Steps != 30 || sum.Epsilon[0].Epsilon != want.Epsilon[0].Epsilon || sum.Epsilon[0].Epsilon > 2 || sum.Epsilon[0].Epsilon < 1.99 {
		t.Errorf("resumed toy run: %d steps, ε = %v; uninterrupted: ε = %v; want 30 steps just below 2", sum.Steps, sum.Epsilon[0].Epsilon, want.Epsilon[0].Epsilon)
	}

	// An algorithm whose optimizer declares nothing is refused for auto, never calibrated
	// as another algorithm.
	silentCfg, err := reg.ParseConfig([]byte(strings.ReplaceAll(toyConfig, "toy-gd", "toy-silent")), []string{"output.dir=" + t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(context.Background(), silentCfg, Options{Algorithms: reg}); err == nil || !strings.Contains(err.Error(), "optimizer.noise_multiplier") {
		t.Errorf("auto with an optimizer that declares nothing: %v, want a refusal", err)
	}
}

// TestMultiRecordStep trains the toy with two records per step: the run stops before the step
// whose two records together would overshoot the target, and auto calibrates σ for both
// records of every planned step.
func TestMultiRecordStep(t *testing.T) {
	reg := config.Builtin()
	if err := reg.Register(toyAlgorithm("toy-gd", true)); err != nil {
		t.Fatal(err)
	}
	// ε of k steps of two records each, composed independently of the trainer.
	eps := func(sigma float64, k int) float64 {
		a, _ := modes.New("rdp", accounting.Run{})
		rec := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, SampleRate: 0.05, NoiseMultiplier: sigma / math.Sqrt2}
		for range k {
			a.Compose(rec)
			a.Compose(rec)
		}
		g, _ := a.Epsilon(1e-5)
		return g.Epsilon
	}
	fixed, err := reg.ParseConfig([]byte(toyConfig), []string{"output.dir=" + t.TempDir(), "optimizer.noise_multiplier=1.5",
		"optimizer.toy-gd.blocks=2", "training.steps=200", "privacy.target_epsilon=3"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(context.Background(), fixed, Options{Algorithms: reg})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps == 0 || sum.Steps >= 200 || sum.StoppedEarly == "" {
		t.Fatalf("ran %d steps (stopped: %q), want an early stop", sum.Steps, sum.StoppedEarly)
	}
	if e := eps(1.5, sum.Steps); e > 3 || math.Abs(e-sum.Epsilon[0].Epsilon) > 1e-9 {
		t.Errorf("ε after %d two-record steps: independent %v, trainer %v; want them equal and ≤ 3", sum.Steps, e, sum.Epsilon[0].Epsilon)
	}
	if e := eps(1.5, sum.Steps+1); e <= 3 {
		t.Errorf("stopped at %d steps though one more two-record step gives ε = %v ≤ 3", sum.Steps, e)
	}

	auto, err := reg.ParseConfig([]byte(toyConfig), []string{"output.dir=" + t.TempDir(), "optimizer.toy-gd.blocks=2"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err = New(context.Background(), auto, Options{Algorithms: reg})
	if err != nil {
		t.Fatal(err)
	}
	sigma := tr.NoiseMultiplier()
	if e, next := eps(sigma, 30), eps(sigma*(1-3e-4), 30); e > 2 || next <= 2 {
		t.Errorf("calibrated σ = %v for two records per step: ε = %v (want ≤ 2), at a σ 0.03%% lower ε = %v (want > 2)", sigma, e, next)
	}
	if sum, err = tr.Run(context.Background()); err != nil || sum.Steps != 30 {
		t.Errorf("calibrated two-record run: %v, %d steps; want 30", err, sum.Steps)
	}
}

// TestBatchCarriesExampleIndices checks that every training batch names its rows' dataset
// indices, and that those are the rows it holds, under every sampling scheme.
func TestBatchCarriesExampleIndices(t *testing.T) {
	for _, scheme := range []string{"poisson", "shuffled", "shuffled-once", "without-replacement"} {
		var tr *Trainer
		batches := 0
		seen := func(b data.Batch) error {
			batches++
			if len(b.Index) != b.N {
				return fmt.Errorf("batch of %d rows has %d indices", b.N, len(b.Index))
			}
			d := tr.train.D
			for i, j := range b.Index {
				if !slices.Equal(b.X[i*d:(i+1)*d], tr.train.X[j*d:(j+1)*d]) || b.Y[i] != tr.train.Y[j] {
					return fmt.Errorf("row %d is not example %d", i, j)
				}
			}
			return nil
		}
		reg := config.Builtin()
		if err := reg.Register(toyObserved("toy-gd", true, seen)); err != nil {
			t.Fatal(err)
		}
		toy := strings.Replace(toyConfig, "  batch_size: 240\n", "  batch_size: 240\n  sampling: "+scheme+"\n", 1)
		cfg, err := reg.ParseConfig([]byte(toy), []string{"output.dir=" + t.TempDir(), "optimizer.noise_multiplier=1",
			"privacy.target_epsilon=0", "privacy.accountants=[gdp]", "privacy.allow_no_guarantee=true", "training.steps=3", "optimizer.toy-gd.scale=1"})
		if err != nil {
			t.Fatal(err)
		}
		if tr, err = New(context.Background(), cfg, Options{Algorithms: reg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Run(context.Background()); err != nil || batches != 3 {
			t.Errorf("%s: %v after %d batches", scheme, err, batches)
		}
	}
}
