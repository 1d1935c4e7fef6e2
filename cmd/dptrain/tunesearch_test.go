package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dptrain tune runs a small seeded search with two worker processes (this test binary acting as
// dptrain), prints the search's certified ε first and says it is not private; run again, it
// prints the finished search; a space file's mistake names the key.
func TestTuneCommand(t *testing.T) {
	t.Setenv(asMainEnv, "1") // the workers are this test binary acting as dptrain
	dir := t.TempDir()
	space := filepath.Join(dir, "space.yaml")
	os.WriteFile(space, []byte(`target_epsilon: 4
delta: 1.0e-5
seed: 7
candidates: {law: poisson, mean: 2.5}
validation: {fraction: 0.1, noise: 10}
parameters:
  - {key: optimizer.learning_rate, range: {lo: 0.05, hi: 1, log: true}}
`), 0o644)
	args := []string{"tune", "--config", "internal/tune/testdata/base.yaml", "--space", space, "--out", filepath.Join(dir, "search"), "--workers", "2"}
	out, _, err := runDptrain(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"search: ε = ", "[tuning, certified] at δ = 1e-05 (target 4)", "one candidate: ε = ", "K ~ Poisson(μ = 2.5)", "NOT PRIVATE: a seed was set", "released: optimizer.learning_rate=", "publish "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	again, _, err := runDptrain(t, args...)
	if err != nil || again != out {
		t.Errorf("a finished search printed otherwise (%v):\n%s", err, again)
	}

	os.WriteFile(space, []byte("target_epsilon: 4\ndelta: 1.0e-5\ncandidates: {law: poisson, mean: 2.5}\nvalidation: {fraction: 0.1}\nparameters:\n  - {key: privacy.delta, values: [1.0e-6]}\n"), 0o644)
	args[len(args)-3] = filepath.Join(dir, "bad")
	if _, _, err := runDptrain(t, args...); err == nil || !strings.Contains(err.Error(), "privacy.delta cannot be searched") {
		t.Errorf("a space that searches privacy.delta: %v", err)
	}
}
