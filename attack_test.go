package dptrain_test

// Attacks on the privacy accounting of a session, written as a caller outside the package
// would write them, with the exported API only. Each either cannot be written any more (the
// test checks that the API it needs is absent) or is refused with an error a caller can
// inspect with errors.As.
//
// Before the session built its own pieces, the same attacks (written against the API of the
// time: Parts took a data.Sampler, an optim.Optimizer, the accountants, the streams and a
// StopRule) all succeeded:
//
//   - a type embedding a real Poisson sampler that returned examples 0–9 at every step ran
//     all 200 steps, its records declaring Poisson sampling;
//   - StopRule{Accountant: "gdp"} was accepted, and CertifiedEpsilon returned gdp's
//     approximate ε;
//   - δ = 0.5 with n = 1000 was accepted;
//   - with Parts.Released failing every other step, 20 steps ran and 10 were composed;
//   - 50 steps taken on the optimizer outside the session went unnoticed (ledger: 2 steps,
//     optimizer: 52);
//   - Private() was true for a session whose optimizer drew seeded noise not listed in
//     Parts.Streams; without a StopRule every ε was asked at δ = 0 and none was given;
//     NoiseMultiplier() returned 0.

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dptrain/dptrain"
	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/algorithm/dpsgd"
	"github.com/dptrain/dptrain/algorithm/dpsgld"
	"github.com/dptrain/dptrain/algorithm/modelmix"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/ledger"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
)

// attackParts are the parts of a seeded DP-SGD run over 1000 examples; the optimizer the plan
// builds is stored in *built, as a caller who kept it would.
func attackParts(t *testing.T, built *optim.Optimizer) dptrain.Parts {
	t.Helper()
	x, y := twoBlobs(1000, 1)
	net, err := models.New(models.Spec{Kind: "logreg", Input: []int{2}, Classes: 2}, rand.New(rand.NewPCG(2, 0)))
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(1)
	return dptrain.Parts{Model: net, Data: &data.Split{X: x, Y: y, N: 1000, D: 2}, BatchSize: 100, Steps: 200,
		Optimizer: dptrain.Mechanism{New: func(sigma float64, noise *optim.Noise) (optim.Optimizer, error) {
			o, err := dpsgd.New(dpsgd.Config{NoiseMultiplier: sigma, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.1}}, noise)
			if built != nil && err == nil {
				*built = o
			}
			return o, err
		}},
		NoiseMultiplier: 1, Privacy: dptrain.Privacy{Delta: 1e-5, Accountants: []string{"rdp", "gdp"}}, Seed: &seed}
}

// A caller cannot hand the session a sampler, a batch declaration or a noise stream: Parts has
// no field for any of them, data.Sampler is a concrete type (a type embedding it stands in for
// nothing), and data.BatchInfo has no field a program can write. So the attacks "a sampler
// that keeps a real sampler's declarations and returns other indices", "a sampler that draws
// shuffle-once and declares Poisson" and "real declarations with hand-picked indices" cannot
// be written.
func TestAttackNoSamplerDeclarationOrStreamFromTheCaller(t *testing.T) {
	forbidden := []reflect.Type{
		reflect.TypeOf((*data.Sampler)(nil)), reflect.TypeOf(data.BatchInfo{}), reflect.TypeOf((*optim.Noise)(nil)),
		reflect.TypeOf((*accounting.Live)(nil)), reflect.TypeOf((*optim.Optimizer)(nil)).Elem(),
		reflect.TypeOf((*data.Sampler)(nil)).Elem(),
	}
	var walk func(typ reflect.Type, path string)
	walk = func(typ reflect.Type, path string) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if !f.IsExported() {
				continue
			}
			for _, bad := range forbidden {
				if f.Type == bad || f.Type.Kind() == reflect.Map && f.Type.Elem() == bad || f.Type.Kind() == reflect.Slice && f.Type.Elem() == bad {
					t.Errorf("%s.%s lets a caller supply a %v", path, f.Name, bad)
				}
			}
			if f.Type.Kind() == reflect.Struct {
				walk(f.Type, path+"."+f.Name)
			}
		}
	}
	walk(reflect.TypeOf(dptrain.Parts{}), "Parts")
	walk(reflect.TypeOf(dptrain.Config{}), "Config")
	if k := reflect.TypeOf(data.Sampler{}).Kind(); k != reflect.Struct {
		t.Errorf("data.Sampler is a %v: a caller's type could implement it", k)
	}
	typ := reflect.TypeOf(data.BatchInfo{})
	for i := range typ.NumField() {
		if typ.Field(i).IsExported() {
			t.Errorf("data.BatchInfo has the exported field %s: a caller could write a declaration", typ.Field(i).Name)
		}
	}
	if (data.BatchInfo{}).Scheme() != "" {
		t.Error("the zero BatchInfo declares a scheme")
	}
}

// recorder is a model that checks every batch it is given against the session's data.
type recorder struct {
	*models.Network
	data    *data.Split
	batches [][]int
	bad     int
}

func (r *recorder) ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error) {
	r.batches = append(r.batches, slices.Clone(b.Index))
	for k, i := range b.Index {
		if !slices.Equal(b.X[k*r.data.D:(k+1)*r.data.D], r.data.Row(i)) || b.Y[k] != r.data.Y[i] {
			r.bad++
		}
	}
	return r.Network.ClippedGradSum(b, clip, grad, norms)
}

// The examples a step trains on are the ones the session's sampler drew, gathered by the
// session from its data: under shuffle-once sampling every epoch visits each example of the
// fixed partition exactly once, in the same batches, and every row is the data's.
func TestAttackBatchesAreTheSamplersDraws(t *testing.T) {
	parts := attackParts(t, nil)
	rec := &recorder{Network: parts.Model.(*models.Network), data: parts.Data}
	parts.Model, parts.Sampling, parts.Steps = rec, data.SchemeShuffledOnce, 30
	parts.Privacy.Accountants, parts.Privacy.AllowNoGuarantee = []string{"rdp"}, true
	s, err := dptrain.NewSession(parts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background(), func(r dptrain.StepResult) error {
		if r.Batch.Scheme() != data.SchemeShuffledOnce || r.Records[0].Sampling != accounting.ShuffledOnce {
			t.Fatalf("step %d declares %q / %q", r.Step, r.Batch.Scheme(), r.Records[0].Sampling)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(rec.batches) != 30 || rec.bad != 0 {
		t.Fatalf("%d batches, %d rows that are not the data's", len(rec.batches), rec.bad)
	}
	seen := make([]int, 1000)
	for k, b := range rec.batches[:10] {
		for _, i := range b {
			seen[i]++
		}
		if !slices.Equal(b, rec.batches[k+10]) || !slices.Equal(b, rec.batches[k+20]) {
			t.Fatalf("batch %d differs between epochs: not a fixed partition", k)
		}
	}
	for i, c := range seen {
		if c != 1 {
			t.Fatalf("example %d is in %d batches of the first epoch", i, c)
		}
	}
	// And rdp, which does not cover shuffling, is refused for it rather than given records
	// that claim Poisson sampling.
	parts.Privacy.AllowNoGuarantee = false
	_, err = dptrain.NewSession(parts)
	var ce *dptrain.ConfigError
	if !errors.As(err, &ce) || ce.Key != "Parts.Privacy.Accountants" {
		t.Errorf("rdp for a shuffle-once run: %v, want a *ConfigError on Parts.Privacy.Accountants", err)
	}
}

// Only a certified accountant may decide when to stop: gdp (approximate) and modelmix (paper)
// are refused with an error naming the certified alternatives; with the explicit opt-in the
// certified ε is still the one CertifiedEpsilon reports.
func TestAttackUncertifiedStopRule(t *testing.T) {
	parts := attackParts(t, nil)
	parts.Privacy.StopAccountant, parts.Privacy.TargetEpsilon = "gdp", 0.5
	_, err := dptrain.NewSession(parts)
	var ce *dptrain.ConfigError
	if !errors.As(err, &ce) || ce.Key != "Parts.Privacy.StopAccountant" || ce.Accountant != "gdp" || ce.Label != accounting.Approximate ||
		!slices.Contains(ce.Certified, "rdp") || ce.Theorem == "" {
		t.Fatalf("gdp as the stop rule: %v (%+v), want a *ConfigError naming gdp, its label and rdp", err, ce)
	}

	mix := attackParts(t, nil)
	mix.Optimizer.New = func(sigma float64, noise *optim.Noise) (optim.Optimizer, error) {
		return modelmix.New(modelmix.Config{NoiseMultiplier: sigma, ClipNorm: 1, LinfParts: 4, Schedule: optim.Constant{Rate: 0.05}, MixRatio: 2}, noise)
	}
	mix.Privacy.Accountants, mix.Privacy.StopAccountant, mix.Privacy.TargetEpsilon = []string{"modelmix", "rdp"}, "modelmix", 2
	_, err = dptrain.NewSession(mix)
	if !errors.As(err, &ce) || ce.Accountant != "modelmix" || ce.Label == accounting.Certified || !slices.Contains(ce.Certified, "rdp") {
		t.Fatalf("modelmix as the stop rule: %v, want a *ConfigError naming modelmix and rdp", err)
	}

	// Opting in lets gdp stop the run; CertifiedEpsilon still reports rdp's bound, never gdp's.
	parts.Privacy.StopOnUncertifiedBound = true
	s, err := dptrain.NewSession(parts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	g, err := s.Certified()
	if err != nil || g.Accountant != "rdp" || g.Label != accounting.Certified {
		t.Fatalf("certified guarantee of a run stopped by gdp: %+v, %v", g, err)
	}
	for _, e := range s.Epsilon() {
		if e.Accountant == "rdp" && e.Epsilon != g.Epsilon {
			t.Errorf("CertifiedEpsilon %v is not rdp's ε %v", g.Epsilon, e.Epsilon)
		}
		if e.Accountant == "gdp" && e.Epsilon > 0.5 {
			t.Errorf("gdp's ε %v exceeds the target it held", e.Epsilon)
		}
	}
	if eps, _ := s.CertifiedEpsilon(); !(eps > 0.5) {
		t.Errorf("the certified ε %v of a run gdp stopped at 0.5 should exceed it", eps)
	}
}

// δ must be below 1/n.
func TestAttackLargeDelta(t *testing.T) {
	for _, delta := range []float64{0.5, 1e-3, 0, 1} {
		parts := attackParts(t, nil)
		parts.Privacy.Delta = delta
		_, err := dptrain.NewSession(parts)
		var ce *dptrain.ConfigError
		if !errors.As(err, &ce) || ce.Key != "Parts.Privacy.Delta" || ce.Value != delta || ce.Fix == "" {
			t.Errorf("δ = %v with n = 1000: %v, want a *ConfigError on Parts.Privacy.Delta with a fix", delta, err)
		}
	}
}

// A step whose records cannot be put on record (Released fails) is still composed, and the
// session stops: no later step runs.
func TestAttackReleasedFails(t *testing.T) {
	parts := attackParts(t, nil)
	parts.Released = func(step int, _ []accounting.Step) error {
		if step == 2 {
			return errors.New("disk full")
		}
		return nil
	}
	s, err := dptrain.NewSession(parts)
	if err != nil {
		t.Fatal(err)
	}
	var le *dptrain.LedgerError
	for k := range 5 {
		_, err := s.Step()
		if k == 0 && err != nil {
			t.Fatal(err)
		}
		if k > 0 && (!errors.As(err, &le) || le.Step != 2) {
			t.Fatalf("call %d after Released failed: %v, want the *LedgerError of step 2", k+1, err)
		}
	}
	if s.Steps() != 2 || s.Ledger()[0].Steps() != 2 {
		t.Errorf("optimizer at %d steps, ledger %d: the failed step must be composed and nothing run after it", s.Steps(), s.Ledger()[0].Steps())
	}
}

// Steps taken on the optimizer outside the session are found before the next step, which the
// session refuses, as every later one.
func TestAttackStepsOutsideTheSession(t *testing.T) {
	var opt optim.Optimizer
	parts := attackParts(t, &opt)
	s, err := dptrain.NewSession(parts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(); err != nil {
		t.Fatal(err)
	}
	own, err := data.NewSampler(data.SchemePoisson, 1000, 100, 0, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	for range 50 {
		idx, info := own.Next(nil)
		x, y := make([]float32, 2*len(idx)), make([]int32, len(idx))
		if err := parts.Data.Gather(idx, x, y); err != nil {
			t.Fatal(err)
		}
		if _, err := opt.Step(parts.Model, data.Batch{X: x, Y: y, N: len(idx), Index: idx}, info); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		_, err = s.Step()
		var le *dptrain.LedgerError
		if !errors.As(err, &le) || le.Composed != 1 || le.OptimizerSteps != 51 {
			t.Fatalf("after 50 steps outside the session: %v, want a *LedgerError (1 composed, 51 taken)", err)
		}
	}
	if s.Ledger()[0].Steps() != 1 {
		t.Errorf("ledger %d steps", s.Ledger()[0].Steps())
	}
}

// An optimizer built with a stream of its own (seeded, so the run is not private) is refused:
// a session cannot report Private() for noise it does not own.
func TestAttackForeignNoise(t *testing.T) {
	parts := attackParts(t, nil)
	parts.Seed = nil
	parts.Optimizer.New = func(sigma float64, _ *optim.Noise) (optim.Optimizer, error) {
		return dpsgd.New(dpsgd.Config{NoiseMultiplier: sigma, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.1}}, optim.NewSeededNoise(7))
	}
	_, err := dptrain.NewSession(parts)
	var ce *dptrain.ConfigError
	if !errors.As(err, &ce) || ce.Key != "Parts.Optimizer" {
		t.Fatalf("an optimizer on seeded noise of its own: %v, want a *ConfigError on Parts.Optimizer", err)
	}
	parts.Optimizer = attackParts(t, nil).Optimizer
	s, err := dptrain.NewSession(parts)
	if err != nil || !s.Private() {
		t.Fatalf("unseeded session: Private() = %v (%v)", s != nil && s.Private(), err)
	}
	parts.Seed = new(uint64)
	if s, err := dptrain.NewSession(parts); err != nil || s.Private() {
		t.Errorf("seeded session: Private() = %v (%v)", s != nil && s.Private(), err)
	}
	// A constructor that keeps the plan's stream and later replaces it with a seeded state
	// makes the session report that it is not private.
	var kept *optim.Noise
	parts.Seed = nil
	parts.Optimizer.New = func(sigma float64, noise *optim.Noise) (optim.Optimizer, error) {
		kept = noise
		return dpsgd.New(dpsgd.Config{NoiseMultiplier: sigma, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.1}}, noise)
	}
	if s, err = dptrain.NewSession(parts); err != nil || !s.Private() {
		t.Fatalf("unseeded session: %v", err)
	}
	state, _ := optim.NewSeededNoise(7).MarshalBinary()
	if err := kept.UnmarshalBinary(state); err != nil {
		t.Fatal(err)
	}
	if s.Private() {
		t.Error("a session whose noise stream was replaced by a seeded state reports Private")
	}
}

// Without a target the session still reports every ε at its δ; NoiseMultiplier is the σ in
// use; DP-SGLD runs without the caller drawing its initial iterate.
func TestAttackDefaults(t *testing.T) {
	s, err := dptrain.NewSession(attackParts(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(); err != nil {
		t.Fatal(err)
	}
	for _, g := range s.Epsilon() {
		if g.Err != nil || !(g.Epsilon > 0) || g.Delta != 1e-5 {
			t.Errorf("%s without a target: ε = %v at δ = %v (%v)", g.Accountant, g.Epsilon, g.Delta, g.Err)
		}
	}
	if eps, err := s.CertifiedEpsilon(); err != nil || !(eps > 0) {
		t.Errorf("CertifiedEpsilon without a target: %v, %v", eps, err)
	}
	if s.NoiseMultiplier() != 1 {
		t.Errorf("NoiseMultiplier() = %v, want 1", s.NoiseMultiplier())
	}

	lc, err := dpsgld.SoftmaxConstants(1, 2, 0.1, true)
	if err != nil {
		t.Fatal(err)
	}
	sgld := attackParts(t, nil)
	sgld.Sampling, sgld.Steps, sgld.Privacy.Accountants = data.SchemeWithoutReplacement, 20, []string{"rdp"}
	sgld.Optimizer = dptrain.Mechanism{Run: lc.Run(1000), New: func(sigma float64, noise *optim.Noise) (optim.Optimizer, error) {
		return dpsgld.New(dpsgld.Config{Sigma: sigma, Constants: lc}, noise)
	}}
	s, err = dptrain.NewSession(sgld)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background(), nil); err != nil || s.Steps() != 20 {
		t.Errorf("DP-SGLD through NewSession: %d steps, %v", s.Steps(), err)
	}
}

// A Parts.Agree hook that always answers "go on" cannot take the run past its target: the
// session stops when either its own rule or the group says so.
func TestAttackAgreeCannotOverrideTheTarget(t *testing.T) {
	parts := attackParts(t, nil)
	parts.Privacy.TargetEpsilon = 0.5
	parts.Agree = func(bool) (bool, error) { return false, nil }
	s, err := dptrain.NewSession(parts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if eps, err := s.CertifiedEpsilon(); err != nil || eps > 0.5 || s.Steps() >= 200 {
		t.Errorf("with Agree always going on: %d steps, ε = %v (%v), want a stop before ε 0.5", s.Steps(), eps, err)
	}
}

// A checkpoint whose ledger was emptied or cut cannot be restored: it would give the restored
// session an ε for fewer steps than ran (an emptied ledger restored with certified ε = 0).
func TestAttackCutLedgerCheckpoint(t *testing.T) {
	sess, err := dptrain.NewSession(attackParts(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if _, err := sess.Step(); err != nil {
			t.Fatal(err)
		}
	}
	c, err := sess.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{0, 5, 9} {
		// The first cut steps of the run-length ledger.
		d := *c
		d.Ledger = nil
		for _, r := range c.Ledger {
			if left := cut - ledgerSteps(d.Ledger); left > 0 {
				r.Count = min(r.Steps(), left)
				d.Ledger = append(d.Ledger, r)
			}
		}
		fresh, err := dptrain.NewSession(attackParts(t, nil))
		if err != nil {
			t.Fatal(err)
		}
		if err := fresh.Restore(&d); err == nil {
			t.Errorf("a checkpoint of %d steps with %d ledger records was restored", c.Step, cut)
		}
	}
	fresh, err := dptrain.NewSession(attackParts(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if err := fresh.Restore(c); err != nil {
		t.Fatalf("the intact checkpoint: %v", err)
	}
}

func ledgerSteps(l []accounting.Step) int {
	n := 0
	for _, r := range l {
		n += r.Steps()
	}
	return n
}

// Data a model cannot take is refused when the plan is built, naming the example, before any
// step spends privacy (a label outside the model's classes used to fail at the step that
// sampled it, after part of the budget was spent).
func TestBadDataRefusedByThePlan(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		edit       func(*dptrain.Parts)
	}{
		{"label", "example 57 has label 2, outside the model's [0, 2)", func(p *dptrain.Parts) { p.Data.Y[57] = 2 }},
		{"width", "has examples of 1 features and the model takes 2", func(p *dptrain.Parts) {
			p.Data = &data.Split{X: p.Data.X[:1000], Y: p.Data.Y, N: 1000, D: 1}
		}},
	} {
		p := attackParts(t, nil)
		tc.edit(&p)
		_, err := dptrain.NewSession(p)
		var ce *dptrain.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want a ConfigError saying %q", tc.name, err, tc.want)
		}
	}
}

// Restoring an older checkpoint into fresh sessions again and again, to take the same privacy
// budget many times over: with a ledger store, every session composes every step the store
// holds, so ε counts all the steps ever run (before stores, 140 steps run over three sessions
// restored from step 10 reported ε for 50); a damaged or foreign store is refused; without a
// store, every guarantee says that it counts the session and its checkpoint only.
func TestAttackRewindLedgerStore(t *testing.T) {
	store := t.TempDir()
	parts := func() dptrain.Parts {
		p := attackParts(t, nil)
		p.Privacy.Ledger = store
		return p
	}
	run := func(s *dptrain.Session, n int) {
		t.Helper()
		for range n {
			if _, err := s.Step(); err != nil {
				t.Fatal(err)
			}
		}
	}
	rdp := func(s *dptrain.Session) dptrain.Guarantee {
		t.Helper()
		g := s.Epsilon()[0]
		if g.Err != nil || g.Accountant != "rdp" {
			t.Fatalf("rdp: %v", g)
		}
		return g
	}
	first, err := dptrain.NewSession(parts())
	if err != nil {
		t.Fatal(err)
	}
	run(first, 10)
	c, err := first.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	run(first, 40)
	if _, err := dptrain.NewSession(parts()); !errors.Is(err, ledger.ErrInUse) {
		t.Errorf("a second session on a store in use: %v, want ledger.ErrInUse", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := first.Step(); err == nil {
		t.Error("a closed session stepped")
	}
	executed := 50
	for range 2 {
		s, err := dptrain.NewSession(parts())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Restore(c); err != nil {
			t.Fatal(err)
		}
		run(s, 45)
		executed += 45
		// ε is that of every step ever run: the same as one session of `executed` steps.
		ref, err := dptrain.NewSession(attackParts(t, nil))
		if err != nil {
			t.Fatal(err)
		}
		run(ref, executed)
		if got, want := rdp(s), rdp(ref); math.Abs(got.Epsilon-want.Epsilon) > 1e-9*want.Epsilon || got.Store != store || want.Store != "" {
			t.Errorf("after %d steps in all: ε = %v (store %q), want %v, that of %d steps", executed, got.Epsilon, got.Store, want.Epsilon, executed)
		}
		if !strings.Contains(rdp(ref).String(), "no ledger store") {
			t.Errorf("a guarantee without a store does not say so: %s", rdp(ref))
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A checkpoint written without the store, or with another store, is refused.
	other, err := dptrain.NewSession(attackParts(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	run(other, 10)
	foreign, err := other.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	s, err := dptrain.NewSession(parts())
	if err != nil {
		t.Fatal(err)
	}
	var le *ledger.Error
	if err := s.Restore(foreign); !errors.As(err, &le) || le.Damage != ledger.Unchained {
		t.Errorf("a checkpoint written without the store: %v, want a *ledger.Error (%s)", err, ledger.Unchained)
	}
	s.Close()
	// A store whose ledger lost its last lines is refused when it is opened again and a
	// checkpoint it no longer reaches is restored.
	path := filepath.Join(store, ledger.FileName)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	if err := os.WriteFile(path, []byte(strings.Join(lines[:5], "")), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = dptrain.NewSession(parts())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Restore(c); !errors.As(err, &le) || le.Damage != ledger.Truncated {
		t.Errorf("a checkpoint beyond a cut store: %v, want a *ledger.Error (%s)", err, ledger.Truncated)
	}
	s.Close()
	// An edited line is refused when the store is opened.
	lines[3] = strings.Replace(lines[3], `"step":4`, `"step":5`, 1)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := dptrain.NewSession(parts()); !errors.As(err, &le) {
		t.Errorf("an edited store: %v, want a *ledger.Error", err)
	}
}

// A hidden-state bound (DP-SGLD's sgld accountant: the last iterate of one trajectory) stops
// applying once the store holds steps of a trajectory the session does not continue; the
// composition accountants still count them all.
func TestLedgerStoreVoidsHiddenStateBounds(t *testing.T) {
	lc, err := dpsgld.SoftmaxConstants(1, 2, 0.1, true)
	if err != nil {
		t.Fatal(err)
	}
	store := t.TempDir()
	parts := attackParts(t, nil)
	parts.Sampling, parts.Steps, parts.Privacy.Accountants, parts.Privacy.Ledger = data.SchemeWithoutReplacement, 20, []string{"rdp", "sgld"}, store
	parts.Optimizer = dptrain.Mechanism{Run: lc.Run(1000), New: func(sigma float64, noise *optim.Noise) (optim.Optimizer, error) {
		return dpsgld.New(dpsgld.Config{Sigma: sigma, Constants: lc}, noise)
	}}
	for i, wantVoid := range []bool{false, true} {
		p := parts
		p.Model, err = models.New(models.Spec{Kind: "logreg", Input: []int{2}, Classes: 2}, rand.New(rand.NewPCG(2, 0)))
		if err != nil {
			t.Fatal(err)
		}
		s, err := dptrain.NewSession(p)
		if err != nil {
			t.Fatal(err)
		}
		for range 5 {
			if _, err := s.Step(); err != nil {
				t.Fatal(err)
			}
		}
		gs := s.Epsilon()
		if gs[0].Err != nil {
			t.Errorf("session %d: rdp: %v", i, gs[0].Err)
		}
		if void := gs[1].Err != nil; void != wantVoid {
			t.Errorf("session %d: sgld voided = %v (%v), want %v", i, void, gs[1].Err, wantVoid)
		}
		s.Close()
	}
}
