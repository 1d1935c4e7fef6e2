package builtin_test

import (
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/algorithm/dpsgd"
	"github.com/dptrain/dptrain/algorithm/dpsgld"
	"github.com/dptrain/dptrain/algorithm/internal/steptest"
	"github.com/dptrain/dptrain/algorithm/modelmix"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// resumable is an optimizer under test with what its run needs besides the batches.
type resumable struct {
	opt  optim.Checkpointer
	step func(m optim.GradientOracle, b data.Batch) (optim.Result, error)
}

// TestStateRestoreIsExact stops a seeded run after half its steps, saves the optimizer's state,
// the parameters and the noise stream as a checkpoint would (copies, the stream as bytes),
// builds everything afresh from those copies and finishes the run. The parameters must be
// bit-identical to those of the run that never stopped. Two controls show that the test can
// fail: resuming without Restore, and resuming one step later in the schedule, both differ.
func TestStateRestoreIsExact(t *testing.T) {
	const d, classes, steps, stop = 4, 3, 8, 4
	poisson := steptest.Drawn(data.SchemePoisson, 60, (0.2)*float64(60), 0, 0)
	wor := steptest.Drawn(data.SchemeWithoutReplacement, 60, float64(12), 0, 0)
	langevin, err := dpsgld.SoftmaxConstants(2, classes, 0.1, true)
	if err != nil {
		t.Fatal(err)
	}
	dpsgd := func(rule func() optim.UpdateRule) func(t *testing.T, noise *optim.Noise) resumable {
		return func(t *testing.T, noise *optim.Noise) resumable {
			o, err := dpsgd.New(dpsgd.Config{NoiseMultiplier: 1, ClipNorm: 1, Rule: rule(), Schedule: steptest.MustStepDecay(t, 0.2, 0.5, 3)}, noise)
			if err != nil {
				t.Fatal(err)
			}
			return resumable{o, func(m optim.GradientOracle, b data.Batch) (optim.Result, error) { return o.Step(m, b, poisson) }}
		}
	}
	for _, tc := range []struct {
		name string
		// build returns a fresh optimizer drawing from noise; init prepares a fresh run's
		// parameters (DP-SGLD's Init) and is skipped on resume.
		build func(t *testing.T, noise *optim.Noise) resumable
		init  func(o optim.Checkpointer, params []float32)
	}{
		{name: "dpsgd/sgd", build: dpsgd(func() optim.UpdateRule { r, _ := optim.NewSGD(0.01); return r })},
		{name: "dpsgd/momentum", build: dpsgd(func() optim.UpdateRule { r, _ := optim.NewMomentum(0.9, false, 0.01); return r })},
		{name: "dpsgd/nesterov", build: dpsgd(func() optim.UpdateRule { r, _ := optim.NewMomentum(0.9, true, 0); return r })},
		{name: "dpsgd/adam", build: dpsgd(func() optim.UpdateRule { r, _ := optim.NewAdam(0.9, 0.999, 1e-8, 0, false); return r })},
		{name: "dpsgd/adamw", build: dpsgd(func() optim.UpdateRule { r, _ := optim.NewAdam(0.8, 0.99, 1e-6, 0.01, true); return r })},
		{name: "modelmix", build: func(t *testing.T, noise *optim.Noise) resumable {
			o, err := modelmix.New(modelmix.Config{NoiseMultiplier: 1, ClipNorm: 1, LinfParts: 2, Schedule: steptest.MustStepDecay(t, 0.2, 0.5, 3), MixRatio: 1}, noise)
			if err != nil {
				t.Fatal(err)
			}
			return resumable{o, func(m optim.GradientOracle, b data.Batch) (optim.Result, error) { return o.Step(m, b, poisson) }}
		}},
		{name: "dpsgld", build: func(t *testing.T, noise *optim.Noise) resumable {
			o, err := dpsgld.New(dpsgld.Config{Sigma: 0.5, Constants: langevin, Schedule: dpsgld.Decreasing{Smoothness: langevin.Smoothness, StrongConvexity: langevin.StrongConvexity}}, noise)
			if err != nil {
				t.Fatal(err)
			}
			return resumable{o, func(m optim.GradientOracle, b data.Batch) (optim.Result, error) { return o.Step(m, b, wor) }}
		}, init: func(o optim.Checkpointer, params []float32) { o.(*dpsgld.Optimizer).Init(params) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			batches := make([]data.Batch, steps)
			for i := range batches {
				batches[i] = steptest.SyntheticBatch(12, d, optim.NewSeededNoise(uint64(100+i)))
				for j := range batches[i].Y {
					batches[i].Y[j] %= classes
				}
			}
			run := func(o resumable, m optim.GradientOracle, bs []data.Batch) {
				t.Helper()
				for _, b := range bs {
					if _, err := o.step(m, b); err != nil {
						t.Fatal(err)
					}
				}
			}
			start := func(noise *optim.Noise) (resumable, *steptest.Softmax) {
				o, m := tc.build(t, noise), steptest.NewSoftmax(d, classes)
				if tc.init != nil {
					tc.init(o.opt, m.Theta)
				}
				return o, m
			}

			o, m := start(optim.NewSeededNoise(7))
			run(o, m, batches)
			want := m.Theta

			// The interrupted run, and its checkpoint taken after stop steps.
			noise := optim.NewSeededNoise(7)
			o, m = start(noise)
			run(o, m, batches[:stop])
			vecs, sc := o.opt.State()
			if got := sc["steps"]; got != stop {
				t.Fatalf("State has steps = %v, want %d", got, stop)
			}
			savedVecs := map[string][]float32{}
			for k, v := range vecs {
				savedVecs[k] = slices.Clone(v)
			}
			savedScalars := maps.Clone(sc)
			savedParams := slices.Clone(m.Theta)
			savedNoise, err := noise.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			run(o, m, batches[stop:]) // the saved copies must not alias what the run goes on to change
			if !slices.Equal(m.Theta, want) {
				t.Fatal("the interrupted run itself diverged from the uninterrupted one")
			}

			// resume rebuilds the run from the checkpoint and finishes it; edit may change the
			// restored scalars, restore=false skips Restore.
			resume := func(restore bool, edit func(map[string]float64)) []float32 {
				t.Helper()
				var noise optim.Noise
				if err := noise.UnmarshalBinary(savedNoise); err != nil {
					t.Fatal(err)
				}
				o := tc.build(t, &noise)
				m := steptest.NewSoftmax(d, classes)
				copy(m.Theta, savedParams)
				if restore {
					vecs := map[string][]float32{}
					for k, v := range savedVecs {
						vecs[k] = slices.Clone(v)
					}
					sc := maps.Clone(savedScalars)
					if edit != nil {
						edit(sc)
					}
					if err := o.opt.Restore(vecs, sc); err != nil {
						t.Fatal(err)
					}
				} else if tc.init != nil {
					return nil // DP-SGLD refuses to step without Init or Restore
				}
				run(o, m, batches[stop:])
				return m.Theta
			}
			if got := resume(true, nil); !slices.Equal(got, want) {
				t.Errorf("resumed parameters differ from the uninterrupted run:\n got %v\nwant %v", got, want)
			}
			if got := resume(false, nil); got != nil && slices.Equal(got, want) {
				t.Error("control: resuming without Restore gave the same parameters, so the test cannot detect a lost state")
			}
			if got := resume(true, func(sc map[string]float64) { sc["steps"]++ }); slices.Equal(got, want) {
				t.Error("control: resuming one step later in the schedule gave the same parameters, so the test cannot detect a lost step count")
			}
		})
	}
}

// TestRestoredScheduleContinues checks that a restored optimizer declares and takes step k with
// η_k, computed here by hand from the schedules' formulas, not η_0.
func TestRestoredScheduleContinues(t *testing.T) {
	const k = 7
	poisson := steptest.Drawn(data.SchemePoisson, 40, (0.1)*float64(40), 0, 0)
	c, err := dpsgld.SoftmaxConstants(1, 3, 0.5, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		opt  func(noise *optim.Noise) (interface {
			optim.Checkpointer
			optim.Declarer
			optim.Optimizer
		}, error)
		info data.BatchInfo
		want float64
	}{
		// 0.1·0.5^⌊7/3⌋ = 0.025.
		{"dpsgd/step decay", func(noise *optim.Noise) (interface {
			optim.Checkpointer
			optim.Declarer
			optim.Optimizer
		}, error) {
			return dpsgd.New(dpsgd.Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: optim.StepDecay{Rate: 0.1, Gamma: 0.5, Every: 3}}, noise)
		}, poisson, 0.025},
		// Warm-up 2 of 10 steps: 0.02 + 0.18·(1 + cos(π·5/8))/2.
		{"modelmix/cosine", func(noise *optim.Noise) (interface {
			optim.Checkpointer
			optim.Declarer
			optim.Optimizer
		}, error) {
			return modelmix.New(modelmix.Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: optim.Cosine{Rate: 0.2, Min: 0.02, Total: 10, Warmup: 2}, MixRatio: 1}, noise)
		}, poisson, 0.02 + 0.09*(1+math.Cos(math.Pi*5/8))},
		// 1/(2β + λ·7/2).
		{"dpsgld/decreasing", func(noise *optim.Noise) (interface {
			optim.Checkpointer
			optim.Declarer
			optim.Optimizer
		}, error) {
			return dpsgld.New(dpsgld.Config{Sigma: 1, Constants: c, Schedule: dpsgld.Decreasing{Smoothness: c.Smoothness, StrongConvexity: c.StrongConvexity}}, noise)
		}, steptest.Drawn(data.SchemeWithoutReplacement, 40, float64(4), 0, 0), 1 / (2*c.Smoothness + 0.5*7/2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := tc.opt(optim.NewSeededNoise(1))
			if err != nil {
				t.Fatal(err)
			}
			model := steptest.NewSoftmax(2, 3)
			sc := map[string]float64{"steps": k}
			vecs := map[string][]float32{}
			switch o.(type) {
			case *dpsgld.Optimizer:
				sc["initialised"] = 1
			case *modelmix.Optimizer:
				vecs["previous_iterate"] = make([]float32, len(model.Theta))
			}
			if err := o.Restore(vecs, sc); err != nil {
				t.Fatal(err)
			}
			recs, err := o.Declare(tc.info)
			if err != nil {
				t.Fatal(err)
			}
			if got := recs[0].StepSize; math.Abs(got-tc.want) > 1e-15 {
				t.Errorf("declared step size %v, want η_%d = %v", got, k, tc.want)
			}
			b := data.Batch{X: []float32{0.5, -0.5, 0.1, 0.2, 0, 0.3, -0.2, 0.1}, Y: []int32{0, 1, 2, 1}, N: 4}
			res, err := o.Step(model, b, tc.info)
			if err != nil {
				t.Fatal(err)
			}
			if res.StepSize != recs[0].StepSize {
				t.Errorf("step used η = %v, declared %v", res.StepSize, recs[0].StepSize)
			}
			if _, sc := o.State(); sc["steps"] != k+1 {
				t.Errorf("after one more step State has steps = %v, want %d", sc["steps"], k+1)
			}
		})
	}
}

func TestRestoreRefusals(t *testing.T) {
	noise := optim.NewSeededNoise(1)
	mk := func(rule optim.UpdateRule) optim.Checkpointer {
		o, err := dpsgd.New(dpsgd.Config{NoiseMultiplier: 1, ClipNorm: 1, Rule: rule, Schedule: optim.Constant{Rate: 0.1}}, noise)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	momentum, _ := optim.NewMomentum(0.9, false, 0)
	adam, _ := optim.NewAdam(0.9, 0.999, 1e-8, 0, false)
	mix, _ := modelmix.New(modelmix.Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.1}, MixRatio: 1}, noise)
	c, _ := dpsgld.SoftmaxConstants(1, 3, 0.5, true)
	sgld, _ := dpsgld.New(dpsgld.Config{Sigma: 1, Constants: c}, noise)
	type vecs = map[string][]float32
	type scalars = map[string]float64
	for _, tc := range []struct {
		name string
		opt  optim.Checkpointer
		vecs vecs
		sc   scalars
		want string // part of the error message; "" means Restore must succeed
	}{
		{"sgd/modelmix state", mk(nil), vecs{"previous_iterate": {1}}, scalars{"steps": 3}, `"previous_iterate"`},
		{"sgd/no steps", mk(nil), nil, nil, "no step count"},
		{"sgd/negative steps", mk(nil), nil, scalars{"steps": -1}, "not a non-negative integer"},
		{"sgd/fractional steps", mk(nil), nil, scalars{"steps": 2.5}, "not a non-negative integer"},
		{"sgd/NaN steps", mk(nil), nil, scalars{"steps": math.NaN()}, "not a non-negative integer"},
		{"sgd/adam count", mk(nil), nil, scalars{"steps": 3, "adam_t": 3}, `"adam_t"`},
		{"sgd/fresh", mk(nil), nil, scalars{"steps": 0}, ""},
		{"momentum/no buffer", mk(momentum), nil, scalars{"steps": 3}, "no momentum buffer"},
		{"momentum/adam state", mk(momentum), vecs{"adam_m": {1}, "adam_v": {1}}, scalars{"steps": 3, "adam_t": 3}, `"adam_m"`},
		{"momentum/before first step", mk(momentum), vecs{}, scalars{"steps": 0}, ""},
		{"momentum/ok", mk(momentum), vecs{"momentum": {1, 2}}, scalars{"steps": 3}, ""},
		{"adam/momentum state", mk(adam), vecs{"momentum": {1}}, scalars{"steps": 3, "adam_t": 3}, `"momentum"`},
		{"adam/no count", mk(adam), vecs{"adam_m": {1}, "adam_v": {1}}, scalars{"steps": 3}, "no Adam step count"},
		{"adam/unequal moments", mk(adam), vecs{"adam_m": {1, 2}, "adam_v": {1}}, scalars{"steps": 3, "adam_t": 3}, "lengths 2 and 1"},
		{"adam/count without moments", mk(adam), nil, scalars{"steps": 3, "adam_t": 3}, "damaged"},
		{"adam/steps without moments", mk(adam), nil, scalars{"steps": 3, "adam_t": 0}, "no Adam moments"},
		{"adam/ok", mk(adam), vecs{"adam_m": {1}, "adam_v": {1}}, scalars{"steps": 3, "adam_t": 3}, ""},
		{"modelmix/no previous iterate", mix, nil, scalars{"steps": 2}, "no previous iterate"},
		{"modelmix/momentum", mix, vecs{"momentum": {1}}, scalars{"steps": 2}, `"momentum"`},
		{"modelmix/ok", mix, vecs{"previous_iterate": {1}}, scalars{"steps": 2}, ""},
		{"dpsgld/vector", sgld, vecs{"momentum": {1}}, scalars{"steps": 2, "initialised": 1}, `"momentum"`},
		{"dpsgld/no flag", sgld, nil, scalars{"steps": 2}, "no initialisation flag"},
		{"dpsgld/steps before init", sgld, nil, scalars{"steps": 2, "initialised": 0}, "damaged"},
		{"dpsgld/bad flag", sgld, nil, scalars{"steps": 0, "initialised": 2}, "damaged"},
		{"dpsgld/ok", sgld, nil, scalars{"steps": 2, "initialised": 1}, ""},
	} {
		beforeV, beforeS := tc.opt.State()
		beforeV, beforeS = maps.Clone(beforeV), maps.Clone(beforeS)
		err := tc.opt.Restore(tc.vecs, tc.sc)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && err == nil:
			t.Errorf("%s: accepted", tc.name)
		case tc.want != "" && !strings.Contains(err.Error(), tc.want):
			t.Errorf("%s: error %q does not mention %s", tc.name, err, tc.want)
		case tc.want != "":
			// A refused Restore leaves the optimizer as it was.
			afterV, afterS := tc.opt.State()
			if !maps.EqualFunc(beforeV, afterV, slices.Equal) || !maps.Equal(beforeS, afterS) {
				t.Errorf("%s: a refused Restore changed the state", tc.name)
			}
		}
	}
}

// TestRestoredLengthMismatch: a buffer restored from a checkpoint of another model makes the
// next step fail with an error, before the parameters change.
func TestRestoredLengthMismatch(t *testing.T) {
	poisson := steptest.Drawn(data.SchemePoisson, 8, (0.5)*float64(8), 0, 0)
	b := data.Batch{X: []float32{1, 0, 0, 1}, Y: []int32{0, 1}, N: 2}
	momentum, _ := optim.NewMomentum(0.9, false, 0)
	adam, _ := optim.NewAdam(0.9, 0.999, 1e-8, 0, false)
	for _, tc := range []struct {
		name string
		opt  func() (optim.Optimizer, error)
		vecs map[string][]float32
		sc   map[string]float64
	}{
		{"momentum", func() (optim.Optimizer, error) {
			return dpsgd.New(dpsgd.Config{NoiseMultiplier: 1, ClipNorm: 1, Rule: momentum, Schedule: optim.Constant{Rate: 0.1}}, optim.NewSeededNoise(1))
		}, map[string][]float32{"momentum": {1, 2, 3}}, map[string]float64{"steps": 1}},
		{"adam", func() (optim.Optimizer, error) {
			return dpsgd.New(dpsgd.Config{NoiseMultiplier: 1, ClipNorm: 1, Rule: adam, Schedule: optim.Constant{Rate: 0.1}}, optim.NewSeededNoise(1))
		}, map[string][]float32{"adam_m": {1}, "adam_v": {1}}, map[string]float64{"steps": 1, "adam_t": 1}},
		{"modelmix", func() (optim.Optimizer, error) {
			return modelmix.New(modelmix.Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.1}, MixRatio: 1}, optim.NewSeededNoise(1))
		}, map[string][]float32{"previous_iterate": {1}}, map[string]float64{"steps": 1}},
	} {
		o, err := tc.opt()
		if err != nil {
			t.Fatal(err)
		}
		if err := o.(optim.Checkpointer).Restore(tc.vecs, tc.sc); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		m := steptest.NewSoftmax(2, 2)
		m.Theta[0] = 0.5
		before := slices.Clone(m.Theta)
		if _, err := o.Step(m, b, poisson); err == nil || !strings.Contains(err.Error(), "6") {
			t.Errorf("%s: step with a restored buffer of the wrong length: error %v, want one naming the 6 parameters", tc.name, err)
		}
		if !slices.Equal(before, m.Theta) {
			t.Errorf("%s: the refused step changed the parameters", tc.name)
		}
	}
}
