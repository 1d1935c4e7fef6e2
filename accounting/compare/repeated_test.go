package compare

import (
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

func TestDeltaWarningWhenDeltaIsNotBelowOneOverN(t *testing.T) {
	for _, tc := range []struct {
		r    Repeated
		warn bool
	}{
		{Repeated{Delta: 1e-5, DatasetSize: 60000}, false},
		{Repeated{Delta: 1e-4, DatasetSize: 60000}, true},
		{Repeated{Delta: 1e-4, BatchSize: 256, SampleRate: 256.0 / 60000}, true},
		{Repeated{Delta: 1e-4}, false}, // n unknown
	} {
		if w := tc.r.DeltaWarning(); (w != "") != tc.warn || tc.warn && !strings.Contains(w, "1/n = 1/60000") {
			t.Errorf("%+v: warning %q", tc.r, w)
		}
	}
}

func repeated() Repeated {
	return Repeated{SampleRate: 0.01, Delta: 1e-5, Steps: -1, Epochs: 2, Sampling: "poisson", Mechanism: string(accounting.Gaussian)}
}

func TestRepeatedStep(t *testing.T) {
	s, err := repeated().Step(1.1)
	if err != nil || s.Count != 200 || s.Sampling != accounting.Poisson || s.Neighbouring != accounting.AddRemove || s.NoiseStd != 1.1 {
		t.Errorf("2 epochs at q = 0.01: %+v, %v; want 200 Poisson add-remove steps", s, err)
	}
	r := repeated()
	r.Sampling, r.DatasetSize = "without-replacement", 1000
	if s, err := r.Step(1); err != nil || s.BatchSize != 10 || s.Neighbouring != accounting.ReplaceOne {
		t.Errorf("without replacement: %+v, %v; want b = q·n = 10, replace-one", s, err)
	}
	for _, tc := range []struct {
		edit func(*Repeated)
		want string
	}{
		{func(r *Repeated) { r.SampleRate = 0 }, "--sample-rate"},
		{func(r *Repeated) { r.Delta = 1 }, "--delta 1 must be in (0, 1)"},
		{func(r *Repeated) { r.Steps = 5 }, "not both"},
		{func(r *Repeated) { r.Epochs = 0 }, "--steps T"},
		{func(r *Repeated) { r.Sampling = "full" }, "--sample-rate 1"},
		{func(r *Repeated) { r.Sampling, r.DatasetSize, r.BatchSize = "without-replacement", 1000, 20 }, "give consistent values"},
		{func(r *Repeated) { r.MinBatchSize = 3 }, "poisson-with-rejection only"},
		{func(r *Repeated) { r.Mechanism = "laplace" }, "--mechanism"},
	} {
		r := repeated()
		tc.edit(&r)
		if _, err := r.Step(1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one mentioning %q", r, err, tc.want)
		}
	}
}

// EpsilonEach answers every mode, and says that all failed only when none gave a guarantee.
func TestEpsilonEach(t *testing.T) {
	r := repeated()
	s, err := r.Step(1.1)
	if err != nil {
		t.Fatal(err)
	}
	out, failed := EpsilonEach(append(Accountants("all"), "no-such-mode"), r.Run(), s, r.Delta, nil)
	if failed || len(out) != 4 {
		t.Fatalf("outcomes %+v, failed %v", out, failed)
	}
	for _, o := range out[:3] {
		if o.Reason != "" || !(o.Guarantee.Epsilon > 0) {
			t.Errorf("%s: %+v", o.Mode, o)
		}
	}
	if o := out[3]; !strings.Contains(o.Reason, "no-such-mode") {
		t.Errorf("unknown mode: reason %q, want one naming it", o.Reason)
	}
	if _, failed := EpsilonEach([]string{"no-such-mode"}, r.Run(), s, r.Delta, nil); !failed {
		t.Error("one unknown mode: not failed")
	}
}

// Calibrate's σ meets the target, and a slightly smaller σ would not.
func TestCalibrate(t *testing.T) {
	r := repeated()
	sigma, s, g, err := Calibrate("rdp", r, 2)
	if err != nil {
		t.Fatal(err)
	}
	if g.Epsilon > 2 || s.NoiseMultiplier != sigma {
		t.Errorf("σ = %v gives ε = %v (step %+v), want ≤ 2", sigma, g.Epsilon, s)
	}
	below, _ := r.Step(sigma * 0.99)
	if e, err := Epsilon("rdp", r.Run(), below, r.Delta); err != nil || !(e.Epsilon > 2) {
		t.Errorf("σ·0.99 gives ε = %v (%v), want above the target", e.Epsilon, err)
	}
}

func TestDescribedEvaluate(t *testing.T) {
	d := Described{
		Mechanism: string(accounting.Gaussian), Sampling: string(accounting.Poisson), Neighbouring: string(accounting.AddRemove),
		UpdateRule: "sgd", Convexity: string(accounting.NonConvex), NoiseMultiplier: 1.1, Delta: 1e-5,
		Steps: 1000, DatasetSize: 60000, BatchSize: 256, At: []int{500, 2000}, Blocks: 1, BlockEpochs: 1,
	}
	r, err := d.Evaluate([]string{"rdp", "pld"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Best == nil || len(r.Modes) != 2 || len(r.Best.At) != 2 {
		t.Fatalf("report %+v", r)
	}
	var b strings.Builder
	if err := r.WriteTable(&b, d.At); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); !strings.Contains(out, "ε@500") || strings.Contains(out, "ε@2000") || !strings.Contains(out, "ε@1000 (final)") ||
		!strings.Contains(out, "best (") || !strings.Contains(out, "δ = 1e-05, 1000 steps") {
		t.Errorf("table:\n%s", out)
	}
	for _, tc := range []struct {
		edit func(*Described)
		want string
	}{
		{func(d *Described) { d.Steps = 0 }, "--steps 0"},
		{func(d *Described) { d.Delta = 2 }, "--delta 2"},
		{func(d *Described) { d.Blocks = 0 }, "--blocks 0"},
		{func(d *Described) { d.Blocks, d.BatchSize = 2, 0 }, "--blocks needs"},
		{func(d *Described) { d.Plot, d.PlotPoints = true, 1 }, "--plot-points 1"},
		{func(d *Described) { d.BatchSize = 0 }, "give --sample-rate"},
	} {
		e := d
		tc.edit(&e)
		if _, err := e.Evaluate(nil, nil, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want one mentioning %q", err, tc.want)
		}
	}
}
