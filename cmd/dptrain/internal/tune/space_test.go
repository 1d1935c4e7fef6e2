package tune

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

const goodSpace = `
target_epsilon: 2
delta: 1.0e-5
candidates: {law: poisson, mean: 4}
validation: {fraction: 0.1}
parameters:
  - {key: optimizer.learning_rate, range: {lo: 0.05, hi: 2, log: true}}
`

// Every mistake is refused with the key it is about and what to write instead.
func TestSpaceErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"empty", "", []string{"empty", "quickstart-space"}},
		{"typo", strings.Replace(goodSpace, "delta:", "delt:", 1), []string{"line 3", "unknown key delt", "target_epsilon, delta"}},
		{"typo in section", strings.Replace(goodSpace, "mean: 4", "men: 4", 1), []string{"unknown key candidates.men", "law, mean, eta"}},
		{"typo in range", strings.Replace(goodSpace, "log: true", "logscale: true", 1), []string{"parameters[0].range.logscale"}},
		{"no target", strings.Replace(goodSpace, "target_epsilon: 2", "target_epsilon: 0", 1), []string{"target_epsilon = 0", "e.g. target_epsilon: 2"}},
		{"delta", strings.Replace(goodSpace, "1.0e-5", "2", 1), []string{"delta = 2", "(0, 1)"}},
		{"law", strings.Replace(goodSpace, "poisson", "binomial", 1), []string{`candidates.law = "binomial"`, "negative-binomial"}},
		{"eta missing", strings.Replace(goodSpace, "poisson", "negative-binomial", 1), []string{"candidates.eta is missing", "eta: 0.5"}},
		{"eta with poisson", strings.Replace(goodSpace, "mean: 4", "mean: 4, eta: 1", 1), []string{"candidates.eta is only for law negative-binomial"}},
		{"mean", strings.Replace(goodSpace, "law: poisson, mean: 4", "law: geometric, mean: 1", 1), []string{"candidates (law geometric, mean 1)", "above 1"}},
		{"fraction", strings.Replace(goodSpace, "fraction: 0.1", "fraction: 1.5", 1), []string{"validation.fraction = 1.5", "(0, 1)"}},
		{"noise", strings.Replace(goodSpace, "fraction: 0.1", "fraction: 0.1, noise: -1", 1), []string{"validation.noise = -1"}},
		{"no parameters", strings.Split(goodSpace, "parameters:")[0], []string{"parameters is empty", "key: optimizer.learning_rate"}},
		{"privacy key", goodSpace + "  - {key: privacy.delta, values: [1.0e-6]}\n", []string{"privacy.delta cannot be searched", "target_epsilon and delta"}},
		{"noise key", goodSpace + "  - {key: optimizer.noise_multiplier, values: [1]}\n", []string{"optimizer.noise_multiplier cannot be searched", "calibrates"}},
		{"data key", goodSpace + "  - {key: data.train_subset, values: [100]}\n", []string{"data.train_subset cannot be searched"}},
		{"batch range", goodSpace + "  - {key: optimizer.batch_size, range: {lo: 64, hi: 512, int: true}}\n", []string{"optimizer.batch_size", "list of values, not a range"}},
		{"both", goodSpace + "  - {key: optimizer.clip_norm, values: [1], range: {lo: 1, hi: 2}}\n", []string{"optimizer.clip_norm", "either values"}},
		{"twice", goodSpace + "  - {key: optimizer.learning_rate, values: [1]}\n", []string{"optimizer.learning_rate is listed twice"}},
		{"epochs and steps", goodSpace + "  - {key: training.epochs, values: [1]}\n  - {key: training.steps, values: [10]}\n", []string{"give the candidates' length once"}},
		{"log range", goodSpace + "  - {key: optimizer.momentum, range: {lo: 0, hi: 0.9, log: true}}\n", []string{"optimizer.momentum", "log range needs lo > 0"}},
		{"int range", goodSpace + "  - {key: optimizer.momentum, range: {lo: 0.5, hi: 3, int: true}}\n", []string{"int range needs whole lo and hi"}},
		{"no key", goodSpace + "  - {values: [1]}\n", []string{"an entry has no key"}},
	} {
		_, err := ParseSpace([]byte(tc.yaml))
		if err == nil {
			t.Errorf("%s: accepted", tc.name)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, w)
			}
		}
	}
}

// A value the base config refuses is named with its parameter before anything runs.
func TestSpaceCheckAgainstBase(t *testing.T) {
	base, err := os.ReadFile("testdata/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ param, want string }{
		{"{key: optimizer.learning_rat, values: [0.1]}", "optimizer.learning_rat = 0.1"},
		{"{key: optimizer.batch_size, values: [1.5]}", "optimizer.batch_size = 1.5"},
		{"{key: optimizer.update, values: [rmsprop]}", "optimizer.update = rmsprop"},
	} {
		s, err := ParseSpace([]byte(goodSpace + "  - " + tc.param + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CheckAgainst(base); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.param, err, tc.want)
		}
	}
}

// Draws stay in their ranges, lists keep their YAML form, and whole numbers are whole.
func TestDraw(t *testing.T) {
	s, err := ParseSpace([]byte(goodSpace + `  - {key: model.hidden, values: [[16, 8], [32]]}
  - {key: training.eval_every, range: {lo: 3, hi: 5, int: true}}
  - {key: optimizer.momentum, range: {lo: 0.5, hi: 0.9}}
`))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	for range 300 {
		sets, err := s.Draw(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range sets {
			key, val, _ := strings.Cut(o, "=")
			seen[o] = true
			switch key {
			case "optimizer.learning_rate", "optimizer.momentum":
				v, err := strconv.ParseFloat(val, 64)
				lo, hi := 0.05, 2.0
				if key == "optimizer.momentum" {
					lo, hi = 0.5, 0.9
				}
				if err != nil || v < lo || v > hi {
					t.Fatalf("%s out of [%g, %g]", o, lo, hi)
				}
			case "model.hidden":
				if val != "[16, 8]" && val != "[32]" {
					t.Fatalf("%s: not a value of the list", o)
				}
			case "training.eval_every":
				if val != "3" && val != "4" && val != "5" {
					t.Fatalf("%s: not a whole number in [3, 5]", o)
				}
			}
		}
	}
	for _, o := range []string{"model.hidden=[16, 8]", "model.hidden=[32]", "training.eval_every=3", "training.eval_every=5"} {
		if !seen[o] {
			t.Errorf("%s never drawn in 300 draws", o)
		}
	}
	// An unseeded search draws from crypto/rand: two sources differ.
	a, _ := source(nil)
	b, _ := source(nil)
	if a.Uint64() == b.Uint64() {
		t.Error("two unseeded sources drew the same number")
	}
	seed := uint64(3)
	a, _ = source(&seed)
	b, _ = source(&seed)
	if a.Uint64() != b.Uint64() {
		t.Error("two sources of one seed differ")
	}
}

// Every shipped space file parses and fits the base config its comment names.
func TestShippedSpaces(t *testing.T) {
	paths, err := filepath.Glob("../../../../configs/tune/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no space files under configs/tune: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`--config (configs/\S+\.yaml)`).FindSubmatch(b)
		if m == nil {
			t.Errorf("%s: its comment names no base config (dptrain tune --config configs/….yaml)", p)
			continue
		}
		s, err := LoadSpace(p)
		if err != nil {
			t.Errorf("%s: %v", p, err)
			continue
		}
		base, err := os.ReadFile(filepath.Join("../../../..", string(m[1])))
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if err := s.CheckAgainst(base); err != nil {
			t.Errorf("%s against %s: %v", p, m[1], err)
		}
	}
}
