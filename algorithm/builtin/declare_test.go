package builtin_test

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/algorithm/dpsgd"
	"github.com/dptrain/dptrain/algorithm/dpsgld"
	"github.com/dptrain/dptrain/algorithm/internal/steptest"
	"github.com/dptrain/dptrain/algorithm/modelmix"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// Declare must predict exactly the records Step then releases.
func TestDeclareMatchesStep(t *testing.T) {
	const n, d, k = 40, 3, 4
	lc, err := dpsgld.SoftmaxConstants(1, k, 0.1, true)
	if err != nil {
		t.Fatal(err)
	}
	newModel := func() *steptest.Softmax { return steptest.NewSoftmax(d, k) }
	mk := func(t *testing.T, name string) (optim.Optimizer, data.BatchInfo, int) {
		noise := optim.NewSeededNoise(1)
		switch name {
		case "dpsgd":
			o, err := dpsgd.New(dpsgd.Config{NoiseMultiplier: 1.3, ClipNorm: 0.5, Schedule: steptest.MustStepDecay(t, 0.1, 0.5, 2)}, noise)
			if err != nil {
				t.Fatal(err)
			}
			return o, steptest.Drawn(data.SchemePoisson, n, (0.25)*float64(n), 0, 0), 10
		case "modelmix":
			o, err := modelmix.New(modelmix.Config{NoiseMultiplier: 1.1, ClipNorm: 1, LinfParts: 4, Schedule: optim.Constant{Rate: 0.05}, MixRatio: 2}, noise)
			if err != nil {
				t.Fatal(err)
			}
			return o, steptest.Drawn(data.SchemePoisson, n, (0.25)*float64(n), 0, 0), 10
		default:
			o, err := dpsgld.New(dpsgld.Config{Sigma: 0.7, Constants: lc, Schedule: dpsgld.Decreasing{Smoothness: lc.Smoothness, StrongConvexity: lc.StrongConvexity}}, noise)
			if err != nil {
				t.Fatal(err)
			}
			return o, steptest.Drawn(data.SchemeWithoutReplacement, n, float64(8), 0, 0), 8
		}
	}
	for _, name := range []string{"dpsgd", "modelmix", "dpsgld"} {
		o, info, bs := mk(t, name)
		m := newModel()
		if s, ok := o.(*dpsgld.Optimizer); ok {
			s.Init(m.Params())
		}
		for step := 0; step < 5; step++ {
			want, err := o.(optim.Declarer).Declare(info)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			b := steptest.SyntheticBatch(bs, d, optim.NewSeededNoise(uint64(step)))
			for i := range b.Y {
				b.Y[i] %= k
			}
			res, err := o.Step(m, b, info)
			if err != nil {
				t.Fatalf("%s step %d: %v", name, step, err)
			}
			if !reflect.DeepEqual(want, res.Records) {
				t.Errorf("%s step %d: declared %+v, released %+v", name, step, want, res.Records)
			}
			if math.IsNaN(res.Records[0].NoiseMultiplier) {
				t.Fatalf("%s: NaN", name)
			}
		}
	}
}

// TestRecordsComeFromTheSampler: a step's record describes the sampler that drew the batch,
// whatever the program meant: a shuffle-once sampler's batches are declared shuffled-once
// (which the Poisson accountants cannot mistake for Poisson sampling), each scheme with its
// own rate, size, n and batch index.
func TestRecordsComeFromTheSampler(t *testing.T) {
	o, err := dpsgd.New(dpsgd.Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.1}}, optim.NewSeededNoise(1))
	if err != nil {
		t.Fatal(err)
	}
	const n, b = 1000, 50
	for _, scheme := range []data.Scheme{data.SchemePoisson, data.SchemeShuffledOnce, data.SchemeShuffled, data.SchemeWithoutReplacement, data.SchemeFull} {
		s, err := data.NewSampler(scheme, n, b, 0, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		for k := range 3 {
			_, info := s.Next(nil)
			recs, err := o.Declare(info)
			if err != nil {
				t.Fatalf("%s: %v", scheme, err)
			}
			r := recs[0]
			if r.Sampling != accounting.Sampling(scheme) || r.SampleRate != s.SampleRate() || r.DatasetSize != n {
				t.Errorf("%s batch %d: record declares %s at rate %v over n = %d, want the sampler's %s at %v over %d",
					scheme, k, r.Sampling, r.SampleRate, r.DatasetSize, scheme, s.SampleRate(), n)
			}
			if (scheme == data.SchemeShuffledOnce || scheme == data.SchemeShuffled) && r.BatchIndex != k {
				t.Errorf("%s batch %d: record declares batch index %d", scheme, k, r.BatchIndex)
			}
		}
	}
}

// Every optimizer reports the stream it was built with (optim.NoiseDrawer), which a plan checks
// is its own; DP-SGLD reports whether its initial iterate was drawn (optim.Initializer).
func TestOptimizersReportTheirNoiseStream(t *testing.T) {
	lc, err := dpsgld.SoftmaxConstants(1, 4, 0.1, true)
	if err != nil {
		t.Fatal(err)
	}
	noise := optim.NewSeededNoise(1)
	sgd, err := dpsgd.New(dpsgd.Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.1}}, noise)
	if err != nil {
		t.Fatal(err)
	}
	mix, err := modelmix.New(modelmix.Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.1}, MixRatio: 2}, noise)
	if err != nil {
		t.Fatal(err)
	}
	sgld, err := dpsgld.New(dpsgld.Config{Sigma: 0.7, Constants: lc}, noise)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []optim.Optimizer{sgd, mix, sgld} {
		if nd, ok := o.(optim.NoiseDrawer); !ok || nd.NoiseStream() != noise {
			t.Errorf("%T does not report the stream it was built with", o)
		}
	}
	var in optim.Initializer = sgld
	if in.Initialized() {
		t.Error("DP-SGLD reports an initial iterate before Init")
	}
	in.Init(make([]float32, 12))
	if !in.Initialized() {
		t.Error("DP-SGLD does not report its initial iterate after Init")
	}
}
