package dptrain

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// meanModel is a linear model whose per-example gradient is the example's features (a
// constant-gradient loss, w·x): enough for a step to run.
type meanModel struct{ w []float32 }

func (m *meanModel) Params() []float32 { return m.w }

func (m *meanModel) ClippedGradSum(b data.Batch, clip float64, grad []float32, norms []float64) (data.Stats, error) {
	clear(grad)
	d := len(m.w)
	for i := range b.N {
		g := b.X[i*d : (i+1)*d]
		var ss float64
		for _, v := range g {
			ss += float64(v) * float64(v)
		}
		n := math.Sqrt(ss)
		if norms != nil {
			norms[i] = n
		}
		s := 1.0
		if n > clip {
			s = clip / n
		}
		for j, v := range g {
			grad[j] += float32(s * float64(v))
		}
	}
	return data.Stats{N: b.N}, nil
}

func (m *meanModel) PerSampleGradSum(b data.Batch, f func(int, []float32), grad []float32) (data.Stats, error) {
	clear(grad)
	d := len(m.w)
	g := make([]float32, d)
	for i := range b.N {
		copy(g, b.X[i*d:(i+1)*d])
		f(i, g)
		for j, v := range g {
			grad[j] += v
		}
	}
	return data.Stats{N: b.N}, nil
}

func testData(n, d int) ([]float32, []int32) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, y := make([]float32, n*d), make([]int32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for i := range y {
		y[i] = int32(i % 2)
	}
	return x, y
}

func seeded(s uint64) *uint64 { return &s }

func baseConfig() Config {
	return Config{BatchSize: 50, ClipNorm: 1, NoiseMultiplier: 1, LearningRate: 0.1, Steps: 200, Delta: 1e-5, Seed: seeded(1)}
}

// The session stops before the step that would take the stopping accountant above the
// target: its ε never exceeds the target, and one more step would have.
func TestSessionStopsBeforeOvershoot(t *testing.T) {
	x, y := testData(1000, 3)
	for _, tc := range []struct {
		name        string
		sampling    data.Scheme
		accountants []string
		target      float64
	}{
		{"poisson rdp", data.SchemePoisson, nil, 1},
		{"poisson rdp tight", data.SchemePoisson, nil, 0.5},
		{"poisson pld", data.SchemePoisson, []string{"pld", "rdp"}, 1},
		{"without replacement rdp", data.SchemeWithoutReplacement, nil, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.Sampling, cfg.Accountants, cfg.TargetEpsilon = tc.sampling, tc.accountants, tc.target
			cfg.NoiseMultiplier = 2
			s, err := MakePrivate(&meanModel{w: make([]float32, 3)}, x, y, cfg)
			if err != nil {
				t.Fatal(err)
			}
			var last float64
			if err := s.Run(context.Background(), func(StepResult) error {
				eps, err := s.CertifiedEpsilon()
				if err != nil {
					return err
				}
				if eps > tc.target {
					t.Fatalf("after step %d ε = %v exceeds the target %v", s.Steps(), eps, tc.target)
				}
				last = eps
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if s.Steps() == 0 || s.Steps() >= s.PlannedSteps() {
				t.Fatalf("ran %d of %d steps: the target should stop the run partway", s.Steps(), s.PlannedSteps())
			}
			if _, err := s.Step(); !errors.Is(err, ErrBudgetExhausted) {
				t.Fatalf("Step after the stop: got %v, want ErrBudgetExhausted", err)
			}
			if s.Steps() != len(flatten(s.Ledger())) {
				t.Fatalf("ledger holds %d steps, session ran %d", len(flatten(s.Ledger())), s.Steps())
			}
			// One more step would have overshot: compose it on a fresh accountant.
			recs := flatten(s.Ledger())
			over, err := s.live.WouldOvershootAll(recs[len(recs)-1:], tc.target, cfg.Delta, s.plan.stop)
			if err != nil {
				t.Fatal(err)
			}
			if !over {
				t.Fatalf("stopped at ε = %v, although one more step stays within %v", last, tc.target)
			}
		})
	}
}

// flatten expands a run-length ledger into one record per step.
func flatten(ledger []accounting.Step) []accounting.Step {
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

// Every record declares the scheme, rate and dataset size of the session's own sampler.
func TestRecordsCarryTheSamplersScheme(t *testing.T) {
	x, y := testData(600, 2)
	for _, tc := range []struct {
		sampling data.Scheme
		want     accounting.Sampling
		rate     float64
	}{
		{"", accounting.Poisson, 50.0 / 600},
		{data.SchemePoisson, accounting.Poisson, 50.0 / 600},
		{data.SchemeWithoutReplacement, accounting.WithoutReplacement, 50.0 / 600},
		{data.SchemeShuffled, accounting.Shuffled, 50.0 / 600},
	} {
		t.Run(string(tc.want), func(t *testing.T) {
			cfg := baseConfig()
			cfg.Sampling, cfg.Steps = tc.sampling, 5
			s, err := MakePrivate(&meanModel{w: make([]float32, 2)}, x, y, cfg)
			if tc.want == accounting.Shuffled {
				// rdp does not cover shuffling: the refusal comes before any step, naming the field.
				if err == nil || !strings.Contains(err.Error(), "Config.Accountants") || !strings.Contains(err.Error(), "no configured accountant covers") {
					t.Fatalf("got %v, want a refusal naming Config.Accountants", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for range 5 {
				r, err := s.Step()
				if err != nil {
					t.Fatal(err)
				}
				if got := data.Scheme(r.Batch.Scheme()); got != data.Scheme(tc.want) {
					t.Fatalf("batch declares %q, want %q", got, tc.want)
				}
				for _, rec := range r.Records {
					if rec.Sampling != tc.want || math.Abs(rec.SampleRate-tc.rate) > 1e-12 || rec.DatasetSize != 600 {
						t.Fatalf("record %+v: want sampling %s, rate %v, n 600", rec, tc.want, tc.rate)
					}
				}
			}
			if _, err := s.Step(); !errors.Is(err, ErrPlanComplete) {
				t.Fatalf("Step after the plan: got %v, want ErrPlanComplete", err)
			}
		})
	}
}

func TestPrivate(t *testing.T) {
	x, y := testData(200, 2)
	for _, tc := range []struct {
		seed *uint64
		want bool
	}{{nil, true}, {seeded(7), false}} {
		cfg := baseConfig()
		cfg.Seed, cfg.BatchSize, cfg.Delta = tc.seed, 10, 1e-4
		s, err := MakePrivate(&meanModel{w: make([]float32, 2)}, x, y, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if s.Private() != tc.want {
			t.Errorf("seed %v: Private() = %v, want %v", tc.seed, s.Private(), tc.want)
		}
	}
}

// Seeded sessions are reproducible.
func TestSeededReproducible(t *testing.T) {
	x, y := testData(300, 2)
	var params [2][]float32
	for i := range params {
		m := &meanModel{w: make([]float32, 2)}
		s, err := MakePrivate(m, x, y, baseConfig())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Run(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		params[i] = m.w
	}
	for j := range params[0] {
		if params[0][j] != params[1][j] {
			t.Fatalf("seeded runs differ: %v vs %v", params[0], params[1])
		}
	}
}

// Calibration meets the target over the planned steps, and the run completes its plan.
func TestMakePrivateWithEpsilon(t *testing.T) {
	x, y := testData(1000, 2)
	for _, target := range []float64{0.5, 1, 4} {
		cfg := baseConfig()
		cfg.NoiseMultiplier, cfg.TargetEpsilon = 0, target
		s, err := MakePrivateWithEpsilon(&meanModel{w: make([]float32, 2)}, x, y, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Run(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		eps, err := s.CertifiedEpsilon()
		if err != nil {
			t.Fatal(err)
		}
		if eps > target || s.Steps() != s.PlannedSteps() {
			t.Fatalf("target %v: σ = %v ran %d of %d steps to ε = %v", target, s.NoiseMultiplier(), s.Steps(), s.PlannedSteps(), eps)
		}
		if eps < 0.95*target {
			t.Errorf("target %v: ε = %v: σ = %v is not the smallest that meets it", target, eps, s.NoiseMultiplier())
		}
	}
}

// Bad values are errors that name the field and say what to do.
func TestConfigErrors(t *testing.T) {
	x, y := testData(100, 2)
	for _, tc := range []struct {
		name   string
		edit   func(*Config)
		calib  bool
		fields []string
	}{
		{"no noise", func(c *Config) { c.NoiseMultiplier = 0 }, false, []string{"NoiseMultiplier", "MakePrivateWithEpsilon"}},
		{"nan noise", func(c *Config) { c.NoiseMultiplier = math.NaN() }, false, []string{"NoiseMultiplier"}},
		{"noise with calibration", func(c *Config) { c.TargetEpsilon = 1 }, true, []string{"NoiseMultiplier", "leave it 0"}},
		{"calibration without target", func(c *Config) { c.NoiseMultiplier = 0 }, true, []string{"TargetEpsilon"}},
		{"batch too large", func(c *Config) { c.BatchSize = 101 }, false, []string{"BatchSize"}},
		{"batch zero", func(c *Config) { c.BatchSize = 0 }, false, []string{"BatchSize"}},
		{"clip zero", func(c *Config) { c.ClipNorm = 0 }, false, []string{"ClipNorm"}},
		{"clip infinite", func(c *Config) { c.ClipNorm = math.Inf(1) }, false, []string{"ClipNorm"}},
		{"learning rate", func(c *Config) { c.LearningRate = -1 }, false, []string{"LearningRate"}},
		{"no plan", func(c *Config) { c.Steps = 0 }, false, []string{"Steps", "Epochs", "exactly one"}},
		{"two plans", func(c *Config) { c.Epochs = 2 }, false, []string{"Steps", "Epochs", "exactly one"}},
		{"no delta", func(c *Config) { c.Delta = 0 }, false, []string{"Delta", "1/n"}},
		{"large delta", func(c *Config) { c.Delta = 0.01 }, false, []string{"Delta", "1/n", "e.g."}},
		{"negative target", func(c *Config) { c.TargetEpsilon = -1 }, false, []string{"TargetEpsilon"}},
		{"unknown accountant", func(c *Config) { c.Accountants = []string{"nope"} }, false, []string{"Accountants", "unknown accountant"}},
		{"hidden-state accountant", func(c *Config) { c.Accountants = []string{"sgld"} }, false, []string{"Accountants"}},
		{"stop not listed", func(c *Config) { c.StopAccountant = "pld" }, false, []string{"StopAccountant", "add it"}},
		{"approximate stop", func(c *Config) { c.Accountants, c.StopAccountant, c.TargetEpsilon = []string{"gdp", "rdp"}, "gdp", 5 }, false, []string{"StopAccountant", "certified", "rdp"}},
		{"rejection sampling", func(c *Config) { c.Sampling = data.SchemePoissonWithRejection }, false, []string{"Sampling"}},
		{"unknown sampling", func(c *Config) { c.Sampling = "urn" }, false, []string{"Sampling"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.BatchSize, cfg.Delta = 10, 1e-3
			tc.edit(&cfg)
			build := MakePrivate
			if tc.calib {
				build = MakePrivateWithEpsilon
			}
			_, err := build(&meanModel{w: make2()}, x, y, cfg)
			if err == nil {
				t.Fatal("no error")
			}
			for _, f := range tc.fields {
				if !strings.Contains(err.Error(), f) {
					t.Errorf("error %q does not mention %q", err, f)
				}
			}
		})
	}
}

func make2() []float32 { return make([]float32, 2) }

func TestDataErrors(t *testing.T) {
	x, y := testData(100, 2)
	for _, tc := range []struct {
		name string
		m    optim.GradientOracle
		x    []float32
		y    []int32
		want string
	}{
		{"nil model", nil, x, y, "model is nil"},
		{"no examples", &meanModel{w: make2()}, nil, nil, "empty"},
		{"ragged", &meanModel{w: make2()}, x[:199], y, "row-major"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.BatchSize, cfg.Delta = 10, 1e-3
			_, err := MakePrivate(tc.m, tc.x, tc.y, cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

// Batches drawn from the session's sampler outside the session (which only code inside the
// module can reach, through internal/planparts) stop it before its next step.
func TestSessionRefusesDrawsOutsideIt(t *testing.T) {
	x, y := testData(300, 2)
	s, err := MakePrivate(&meanModel{w: make([]float32, 2)}, x, y, baseConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Step(); err != nil {
		t.Fatal(err)
	}
	s.sampler.Next(nil)
	for range 2 {
		_, err := s.Step()
		var le *LedgerError
		if !errors.As(err, &le) || le.SamplerDraws != 2 || le.Composed != 1 {
			t.Fatalf("after a draw outside the session: %v, want a *LedgerError", err)
		}
	}
}

// A step whose records an accountant cannot compose (a malformed record) stops the session
// with a *LedgerError after putting what it can on record.
func TestSessionStopsWhenComposeFails(t *testing.T) {
	x, y := testData(300, 2)
	s, err := MakePrivate(&meanModel{w: make([]float32, 2)}, x, y, baseConfig())
	if err != nil {
		t.Fatal(err)
	}
	s.opt = &badRecords{Optimizer: s.opt}
	_, err = s.Step()
	var le *LedgerError
	if !errors.As(err, &le) || le.Step != 1 {
		t.Fatalf("a malformed record: %v, want a *LedgerError for step 1", err)
	}
	if _, err2 := s.Step(); err2 != err {
		t.Errorf("the next step: %v, want the same error", err2)
	}
}

// badRecords releases a record no accountant accepts (a negative noise multiplier).
type badRecords struct{ optim.Optimizer }

func (b *badRecords) Step(m optim.GradientOracle, batch data.Batch, info data.BatchInfo) (optim.Result, error) {
	res, err := b.Optimizer.Step(m, batch, info)
	for i := range res.Records {
		res.Records[i].NoiseMultiplier = -1
	}
	return res, err
}
