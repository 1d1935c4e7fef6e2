package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/train/rundir"
)

// A private run's report says which of its files may be published and which are the
// operator's only, and the run directory is laid out that way: the public artefacts at the
// top, the operator's files in private/ with a README saying they must not be published.
func TestTrainSaysWhatIsPublishable(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(synthConfig), 0o644)
	run := filepath.Join(dir, "run")
	out, _, err := runDptrain(t, "train", "--config", cfg, "--no-progress", "--set", "output.dir="+run,
		"--set", "training.steps=3", "--set", "seed=")
	if err != nil {
		t.Fatal(err)
	}
	var publish string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "safe to publish:") {
			publish = l
		}
	}
	for _, want := range []string{"model.dpm, summary.json and config.yaml in " + run, "operator only", "not covered by the guarantee", "everything in " + filepath.Join(run, "private") + "/"} {
		if !strings.Contains(publish, want) {
			t.Errorf("the publish line does not say %q:\n%s", want, out)
		}
	}
	for _, f := range []string{rundir.ModelFile, rundir.SummaryFile, rundir.ConfigFile,
		rundir.PrivatePath("", rundir.PrivateReadme), rundir.PrivatePath("", rundir.MetricsJSONL), rundir.PrivatePath("", rundir.MetricsCSV),
		rundir.PrivatePath("", rundir.CheckpointFile), rundir.PrivatePath("", "checkpoint-00000003.dpt")} {
		if _, err := os.Stat(filepath.Join(run, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	// Nothing else at the top: every operator file is under private/.
	top, _ := os.ReadDir(run)
	for _, e := range top {
		switch e.Name() {
		case rundir.ModelFile, rundir.SummaryFile, rundir.ConfigFile, rundir.PrivateDir:
		default:
			t.Errorf("%s at the top of the run directory, which holds only public files", e.Name())
		}
	}
	readme, _ := os.ReadFile(rundir.PrivatePath(run, rundir.PrivateReadme))
	for _, want := range []string{"NOT covered", "must not be published", "batch size"} {
		if !strings.Contains(string(readme), want) {
			t.Errorf("private/README.txt does not say %q:\n%s", want, readme)
		}
	}
}

// A seeded run is reproducible and not private: its report says so and calls nothing safe to
// publish, and the seed is in private/, not in the public config.yaml.
func TestSeededRunIsNotCalledPublishable(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(synthConfig), 0o644) // seed: 1
	run := filepath.Join(dir, "run")
	out, _, err := runDptrain(t, "train", "--config", cfg, "--no-progress", "--set", "output.dir="+run, "--set", "training.steps=3")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "safe to publish") || !strings.Contains(out, "NOT PRIVATE") || !strings.Contains(out, "not for release") {
		t.Errorf("a seeded run's report:\n%s\nwant NOT PRIVATE and not for release, never safe to publish", out)
	}
	if b, _ := os.ReadFile(filepath.Join(run, rundir.ConfigFile)); strings.Contains(string(b), "seed") {
		t.Errorf("the public config.yaml holds the seed:\n%s", b)
	}
	if b, _ := os.ReadFile(filepath.Join(run, rundir.SummaryFile)); strings.Contains(string(b), "wall_s") || strings.Contains(string(b), "ms_per_step") {
		t.Errorf("summary.json publishes the timing:\n%s", b)
	}
	if _, err := os.Stat(rundir.PrivatePath(run, rundir.TimingFile)); err != nil {
		t.Errorf("no timing in private/: %v", err)
	}
}
