package dptrain

import (
	"bytes"
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/algorithm/modelmix"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// A seeded session checkpointed half-way, written, read back and restored into a fresh
// session ends exactly where the uninterrupted session ends: same parameters, same ledger,
// same ε.
func TestCheckpointResumesExactly(t *testing.T) {
	x, y := testData(300, 2)
	cfg := baseConfig()
	cfg.Steps, cfg.Accountants = 40, []string{"rdp", "pld"}

	whole := &meanModel{w: make([]float32, 2)}
	s, err := MakePrivate(whole, x, y, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}

	half := &meanModel{w: make([]float32, 2)}
	h, err := MakePrivate(half, x, y, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 17 {
		if _, err := h.Step(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := h.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	c2, err := ReadCheckpoint(&buf)
	if err != nil {
		t.Fatal(err)
	}
	resumed := &meanModel{w: make([]float32, 2)}
	r, err := MakePrivate(resumed, x, y, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Restore(c2); err != nil {
		t.Fatal(err)
	}
	if r.Steps() != 17 || len(r.Ledger()) == 0 {
		t.Fatalf("restored session at step %d with %d ledger entries", r.Steps(), len(r.Ledger()))
	}
	if err := r.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(whole.w, resumed.w) {
		t.Errorf("resumed parameters %v, uninterrupted %v", resumed.w, whole.w)
	}
	if !slices.EqualFunc(flatten(s.Ledger()), flatten(r.Ledger()), func(a, b accounting.Step) bool { return a == b }) {
		t.Errorf("ledgers differ:\n%v\n%v", s.Ledger(), r.Ledger())
	}
	for i, g := range s.Epsilon() {
		if got := r.Epsilon()[i]; got.Epsilon != g.Epsilon {
			t.Errorf("ε[%d] = %v resumed, %v uninterrupted", i, got.Epsilon, g.Epsilon)
		}
	}
}

// A private (unseeded) session's checkpoint carries no stream, and restoring it composes the
// ledger again: the ε spent before the checkpoint is never given back.
func TestRestoreNeverGivesBackPrivacy(t *testing.T) {
	x, y := testData(300, 2)
	cfg := baseConfig()
	cfg.Seed = nil
	s, err := MakePrivate(&meanModel{w: make([]float32, 2)}, x, y, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := s.Step(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Streams) != 0 {
		t.Errorf("a private session's checkpoint carries the streams %v", c.Streams)
	}
	r, err := MakePrivate(&meanModel{w: make([]float32, 2)}, x, y, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Restore(c); err != nil {
		t.Fatal(err)
	}
	want, _ := s.CertifiedEpsilon()
	got, _ := r.CertifiedEpsilon()
	if !(want > 0) || got != want {
		t.Errorf("ε after restore %v, before the checkpoint %v", got, want)
	}
}

func TestRestoreErrors(t *testing.T) {
	x, y := testData(300, 2)
	cfg := baseConfig()
	fresh := func(d int) *Session {
		x, y := testData(300, d)
		s, err := MakePrivate(&meanModel{w: make([]float32, d)}, x, y, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := fresh(2)
	for range 5 {
		if _, err := s.Step(); err != nil {
			t.Fatal(err)
		}
	}
	good, err := s.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	nan := *good
	nan.Params = []float32{float32(math.NaN()), 0}
	other, err := MakePrivate(&meanModel{w: make([]float32, 2)}, x, y, Config{BatchSize: 30, ClipNorm: 1, NoiseMultiplier: 1,
		LearningRate: 0.1, Steps: 10, Delta: 1e-5, Seed: seeded(1), Sampling: data.SchemeWithoutReplacement})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		into *Session
		c    *Checkpoint
		want string
	}{
		{"nil", fresh(2), nil, "nil"},
		{"already stepped", s, good, "already run 5 steps"},
		{"other model", fresh(3), good, "holds 2 parameters, the model has 3"},
		{"damaged parameter", fresh(2), &nan, "damaged"},
		{"other sampler", other, good, "sampler"},
	} {
		err := tc.into.Restore(tc.c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Restore = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := ReadCheckpoint(strings.NewReader("not a checkpoint")); err == nil {
		t.Error("ReadCheckpoint accepted garbage")
	}
}

// NewSession runs an optimizer other than DP-SGD (ModelMix) from its configuration, with the
// sampler, the streams, the accountants and the stop rule the plan builds, and its checks name
// what is wrong with the parts.
func TestNewSessionRunsAnyOptimizer(t *testing.T) {
	x, y := testData(400, 2)
	src := &data.Split{X: x, Y: y, N: 400, D: 2}
	mix := Mechanism{New: func(sigma float64, noise *optim.Noise) (optim.Optimizer, error) {
		return modelmix.New(modelmix.Config{NoiseMultiplier: sigma, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.1}, MixRatio: 0.02}, noise)
	}}
	var released int
	parts := Parts{Model: &meanModel{w: make([]float32, 2)}, Data: src, BatchSize: 40, Steps: 1000, Optimizer: mix,
		NoiseMultiplier: 2, Privacy: Privacy{Delta: 1e-5, TargetEpsilon: 1}, Seed: seeded(5),
		Released: func(step int, recs []accounting.Step) error { released += len(recs); return nil }}
	s, err := NewSession(parts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	eps, err := s.CertifiedEpsilon()
	if err != nil || eps > 1 || s.Steps() == 0 || s.Steps() >= 1000 {
		t.Errorf("ModelMix session: %d steps, ε = %v (%v); want it stopped before ε 1", s.Steps(), eps, err)
	}
	if _, err := s.Step(); !errors.Is(err, ErrBudgetExhausted) {
		t.Errorf("after the target: %v, want ErrBudgetExhausted", err)
	}
	if released != len(flatten(s.Ledger())) {
		t.Errorf("Released saw %d records, the ledger holds %d", released, len(flatten(s.Ledger())))
	}
	if s.Private() || s.NoiseMultiplier() != 2 || s.Plan().StopAccountant() != "rdp" {
		t.Errorf("seeded ModelMix session: Private %v, σ %v, stop accountant %q", s.Private(), s.NoiseMultiplier(), s.Plan().StopAccountant())
	}

	for _, tc := range []struct {
		name string
		edit func(p *Parts)
		want string
	}{
		{"no model", func(p *Parts) { p.Model = nil }, "Parts.Model"},
		{"no data", func(p *Parts) { p.Data = &data.Split{} }, "Parts.Data"},
		{"no optimizer", func(p *Parts) { p.Optimizer = Mechanism{} }, "Parts.Optimizer"},
		{"unknown stop accountant", func(p *Parts) { p.Privacy.StopAccountant = "pld" }, "not among"},
		{"NaN target", func(p *Parts) { p.Privacy.TargetEpsilon = math.NaN() }, "TargetEpsilon"},
		{"δ of 1", func(p *Parts) { p.Privacy.Delta = 1 }, "Delta"},
		{"δ above 1/n", func(p *Parts) { p.Privacy.Delta = 0.01 }, "1/n"},
		{"negative plan", func(p *Parts) { p.Steps = -1 }, "Parts.Steps"},
		{"batch too large", func(p *Parts) { p.BatchSize = 401 }, "Parts.BatchSize"},
		{"no σ", func(p *Parts) { p.NoiseMultiplier = 0 }, "Parts.NoiseMultiplier"},
		{"seed and streams", func(p *Parts) { p.Streams, _ = NewStreams(nil) }, "Parts.Seed"},
	} {
		p := parts
		tc.edit(&p)
		_, err := NewSession(p)
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: NewSession = %v, want a *ConfigError containing %q", tc.name, err, tc.want)
		}
	}
}
