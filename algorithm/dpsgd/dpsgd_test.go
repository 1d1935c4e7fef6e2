package dpsgd

import (
	"math"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/algorithm/internal/steptest"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// TestDPSGDNoiseScale checks the released update's noise on a model whose gradients are zero:
// with θ_0 = 0 and SGD, θ_1 = −η·N(0, σ²C²)/B per coordinate, so Σθ²/(ησC/B)² ~ χ²_d.
func TestDPSGDNoiseScale(t *testing.T) {
	const d = 1 << 20
	for _, tc := range []struct {
		name  string
		info  data.BatchInfo
		batch int
		B     float64 // the normaliser, by hand
	}{
		{"poisson", steptest.Drawn(data.SchemePoisson, 12000, (0.01)*float64(12000), 0, 0), 117, 120},
		{"shuffled", steptest.Drawn(data.SchemeShuffled, 1000, float64(50), 0, 0), 50, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const sigma, clip, lr = 1.3, 2.5, 0.7
			o, err := New(Config{NoiseMultiplier: sigma, ClipNorm: clip, Schedule: optim.Constant{Rate: lr}}, optim.NewSeededNoise(5))
			if err != nil {
				t.Fatal(err)
			}
			m := &steptest.Zero{Theta: make([]float32, d)}
			if _, err := o.Step(m, data.Batch{N: tc.batch}, tc.info); err != nil {
				t.Fatal(err)
			}
			want := lr * sigma * clip / tc.B
			var s float64
			for _, v := range m.Theta {
				s += float64(v) * float64(v)
			}
			lo, hi := steptest.Chi2Bounds(d, 1e-4)
			if x := s / (want * want); x < lo || x > hi {
				t.Errorf("Σθ²/(ησC/B)² = %v outside χ²_%d interval [%v, %v]: per-coordinate std %v, want %v", x, d, lo, hi, math.Sqrt(s/d), want)
			}
		})
	}
}

// TestDPSGDClippedMean checks clipping and normalisation without noise: per-sample gradients
// (3, 4), (0.3, 0.4), (0, −2) clipped at C = 1 are (0.6, 0.8), (0.3, 0.4), (0, −1); their sum
// (0.9, 0.2) over the full batch of 3 is (0.3, 0.2/3).
func TestDPSGDClippedMean(t *testing.T) {
	o, err := New(Config{NoiseMultiplier: 0, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.5}}, optim.NewSeededNoise(1))
	if err != nil {
		t.Fatal(err)
	}
	m := &steptest.Table{Theta: []float32{1, 1}}
	b := data.Batch{X: []float32{3, 4, 0.3, 0.4, 0, -2}, Y: make([]int32, 3), N: 3}
	res, err := o.Step(m, b, steptest.Drawn(data.SchemeFull, 3, float64(3), 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := []float64{1 - 0.5*0.3, 1 - 0.5*0.2/3}
	for i, w := range want {
		if math.Abs(float64(m.Theta[i])-w) > 1e-6 {
			t.Errorf("θ = %v, want %v", m.Theta, want)
		}
	}
	if res.Stats.Clipped != 2 {
		t.Errorf("Stats.Clipped = %d, want 2", res.Stats.Clipped)
	}
	// The non-private step's record must make every accountant refuse the run.
	r := res.Records[0]
	if r.Mechanism != accounting.NonPrivate || r.NoiseMultiplier != 0 {
		t.Errorf("non-private record %+v", r)
	}
	if err := r.Validate(); err == nil {
		t.Error("accounting accepted a non-private step")
	}
}

// TestDPSGDNonPrivateBaseline runs plain SGD (σ = 0, C = +Inf) through the same path.
func TestDPSGDNonPrivateBaseline(t *testing.T) {
	o, err := New(Config{ClipNorm: math.Inf(1), Schedule: optim.Constant{Rate: 1}}, optim.NewSeededNoise(1))
	if err != nil {
		t.Fatal(err)
	}
	m := &steptest.Table{Theta: []float32{0, 0}}
	b := data.Batch{X: []float32{30, 40, 10, 0}, Y: make([]int32, 2), N: 2}
	res, err := o.Step(m, b, steptest.Drawn(data.SchemeWithoutReplacement, 10, float64(2), 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if m.Theta[0] != -20 || m.Theta[1] != -20 {
		t.Errorf("θ = %v, want (−20, −20)", m.Theta)
	}
	if res.Records[0].Mechanism != accounting.NonPrivate || res.Records[0].Validate() == nil {
		t.Errorf("non-private record not refused: %+v", res.Records[0])
	}
}

func TestDPSGDRecords(t *testing.T) {
	mom, _ := optim.NewMomentum(0.9, false, 0)
	o, err := New(Config{NoiseMultiplier: 1.1, ClipNorm: 2, Schedule: optim.StepDecay{Rate: 0.2, Gamma: 0.5, Every: 1}, Rule: mom}, optim.NewSeededNoise(1))
	if err != nil {
		t.Fatal(err)
	}
	if !o.Stateful() || o.UpdateRule() != "momentum" {
		t.Errorf("Stateful %v UpdateRule %q, want true momentum", o.Stateful(), o.UpdateRule())
	}
	m := &steptest.Zero{Theta: make([]float32, 10)}
	for _, tc := range []struct {
		info data.BatchInfo
		n    int
		want accounting.Step
	}{
		{steptest.Drawn(data.SchemePoisson, 5000, (0.01)*float64(5000), 0, 0), 48, accounting.Step{
			Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, Neighbouring: accounting.AddRemove,
			NoiseMultiplier: 1.1, SampleRate: 0.01, Count: 1, Sensitivity: 2, NoiseStd: 2.2, StepSize: 0.2,
			DatasetSize: 5000}},
		{steptest.Drawn(data.SchemeShuffledOnce, 5000, float64(50), 0, 3), 50, accounting.Step{
			Mechanism: accounting.Gaussian, Sampling: accounting.ShuffledOnce, Neighbouring: accounting.ReplaceOne,
			NoiseMultiplier: 1.1, SampleRate: 0.01, Count: 1, Sensitivity: 2, NoiseStd: 2.2, StepSize: 0.1,
			BatchSize: 50, DatasetSize: 5000, BatchIndex: 3}},
		{steptest.Drawn(data.SchemePoisson, 5000, 50, 0, 0), 0, accounting.Step{ // an empty Poisson batch still releases noise
			Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, Neighbouring: accounting.AddRemove,
			NoiseMultiplier: 1.1, SampleRate: 0.01, Count: 1, Sensitivity: 2, NoiseStd: 2.2, StepSize: 0.05,
			DatasetSize: 5000}},
	} {
		calls := m.Calls
		res, err := o.Step(m, data.Batch{N: tc.n}, tc.info)
		if err != nil {
			t.Fatal(err)
		}
		got := res.Records[0]
		if math.Abs(got.NoiseStd-tc.want.NoiseStd) < 1e-12 {
			got.NoiseStd = tc.want.NoiseStd
		}
		if got != tc.want {
			t.Errorf("record\n got %+v\nwant %+v", got, tc.want)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("record does not validate: %v", err)
		}
		if tc.n == 0 && m.Calls != calls {
			t.Error("empty Poisson batch called the model")
		}
	}
	if o.Steps() != 3 {
		t.Errorf("Steps() = %d, want 3", o.Steps())
	}
}

func TestDPSGDErrors(t *testing.T) {
	noise := optim.NewSeededNoise(1)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"clip inf with noise", Config{NoiseMultiplier: 1, ClipNorm: math.Inf(1), Schedule: optim.Constant{Rate: 1}}, "finite clip"},
		{"negative sigma", Config{NoiseMultiplier: -1, ClipNorm: 1, Schedule: optim.Constant{Rate: 1}}, "noise multiplier"},
		{"zero clip", Config{NoiseMultiplier: 1, ClipNorm: 0, Schedule: optim.Constant{Rate: 1}}, "clip norm"},
		{"no schedule", Config{NoiseMultiplier: 1, ClipNorm: 1}, "schedule"},
		{"zero rate", Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: optim.Constant{Rate: 0}}, "step size"},
	} {
		if _, err := New(tc.cfg, noise); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	o, _ := New(Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: optim.Constant{Rate: 1}}, noise)
	m := &steptest.Zero{Theta: make([]float32, 3)}
	for _, tc := range []struct {
		name string
		info data.BatchInfo
		n    int
		want string
	}{
		{"partial batch", steptest.Drawn(data.SchemeShuffled, 100, float64(10), 0, 0), 7, "partial"},
		// A BatchInfo not drawn by a data sampler declares nothing: a program cannot pair a
		// sampler with another scheme's declaration.
		{"hand-made declaration", data.BatchInfo{}, 7, "declares no sampling scheme"},
		{"rejection below threshold", steptest.Drawn(data.SchemePoissonWithRejection, 100, (0.1)*float64(100), 8, 0), 7, "below the threshold"},
	} {
		if _, err := o.Step(m, data.Batch{N: tc.n}, tc.info); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	if o.Steps() != 0 {
		t.Errorf("failed steps were counted: Steps() = %d", o.Steps())
	}
}

// TestDPSGDSeededStep checks that a seeded step's update is bit-identical to the clipped sum
// plus AddGaussianScaled from the same seed, on a vector long enough for the noise's chunked
// path (three of its 2^16-coordinate chunks and a partial one; optim's tests vary the number of
// workers), and that the stream goes on from the same place.
func TestDPSGDSeededStep(t *testing.T) {
	const d, n, clip, sigma = 3<<16 + 7, 6, 0.8, 1.1
	m := &steptest.Table{Theta: make([]float32, d)}
	b := data.Batch{X: make([]float32, n*d), N: n}
	for i := range b.X {
		b.X[i] = float32(i%13)/13 - 0.4
	}
	info := steptest.Drawn(data.SchemeShuffled, 60, float64(n), 0, 0)
	want := make([]float32, d)
	if _, err := m.ClippedGradSum(b, clip, want, nil); err != nil {
		t.Fatal(err)
	}
	ref := optim.NewSeededNoise(9)
	if !ref.AddGaussianScaled(want, sigma*clip, 1.0/n) {
		t.Fatal("reference not finite")
	}
	next := ref.Rand().Uint64()
	noise := optim.NewSeededNoise(9)
	o, err := New(Config{NoiseMultiplier: sigma, ClipNorm: clip, Schedule: optim.Constant{Rate: 1}}, noise)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Step(m, b, info); err != nil {
		t.Fatal(err)
	}
	for i, v := range m.Theta {
		if -v != want[i] {
			t.Fatalf("coordinate %d is %v, want %v", i, -v, want[i])
		}
	}
	if noise.Rand().Uint64() != next {
		t.Errorf("the stream is not where the sequential step leaves it")
	}
}
