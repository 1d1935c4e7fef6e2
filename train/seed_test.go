package train

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/train/rundir"
)

// A seeded run keeps its seed out of the public config.yaml (in private/seed.yaml, where a
// resume finds it) and is labelled not private in its summary.
func TestSeedIsPrivateAndSeededRunNotPrivate(t *testing.T) {
	dir := t.TempDir()
	runUntilCrash(t, dir, 15) // synthetic sets seed: 3
	pub, err := os.ReadFile(filepath.Join(dir, rundir.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(pub), "seed") {
		t.Errorf("the public %s holds the seed:\n%s", rundir.ConfigFile, pub)
	}
	if b, err := os.ReadFile(rundir.PrivatePath(dir, "seed.yaml")); err != nil || !strings.Contains(string(b), "seed: 3") {
		t.Errorf("private/seed.yaml: %q, %v; want the seed", b, err)
	}
	sum, err := resume(t, dir, Options{}) // from the public config.yaml
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Reproducible || sum.NotPrivate == "" {
		t.Errorf("resumed seeded run: reproducible %v, not_private %q; want it seeded and labelled not private", sum.Reproducible, sum.NotPrivate)
	}
	b, err := os.ReadFile(filepath.Join(dir, rundir.SummaryFile))
	if err != nil || !strings.Contains(string(b), `"not_private": "a seed was set`) {
		t.Errorf("summary.json does not label the seeded run not private:\n%s", b)
	}

	// An unseeded run is not labelled.
	tr, _ := newTrainer(t, "seed=", "training.steps=2")
	if tr.cfg.Seed != nil {
		t.Skip("cannot unset the seed through --set")
	}
	s2, err := tr.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s2.NotPrivate != "" {
		t.Errorf("unseeded run labelled not private: %q", s2.NotPrivate)
	}
}

// A run whose stopping accountant was resolved (privacy.stop_accountant unset, a target set)
// resumes from its own saved config.yaml.
func TestResumeFromSavedConfigWithResolvedStopAccountant(t *testing.T) {
	dir := t.TempDir()
	runUntilCrash(t, dir, 15, "privacy.target_epsilon=20")
	sum, err := resume(t, dir, Options{})
	if err != nil {
		t.Fatalf("resume from the saved config.yaml: %v", err)
	}
	if sum.Steps != 30 {
		t.Errorf("resumed run: %d steps, want 30", sum.Steps)
	}
}

// A seeded run whose private/seed.yaml was deleted is not resumed as an unseeded one: the
// error names the missing file and the seed it held.
func TestResumeNamesAMissingSeedFile(t *testing.T) {
	dir := t.TempDir()
	runUntilCrash(t, dir, 15) // synthetic sets seed: 3
	if err := os.Remove(rundir.PrivatePath(dir, rundir.SeedFile)); err != nil {
		t.Fatal(err)
	}
	_, err := resume(t, dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "its seed file "+rundir.PrivatePath(dir, rundir.SeedFile)+" is missing") || !strings.Contains(err.Error(), "seed: 3") {
		t.Fatalf("resume without private/seed.yaml: %v, want the missing file named with its seed", err)
	}
}
