package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/train/rundir"
)

// audit --json and the text report, the report file and the plot.
func TestAuditCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(synthConfig), 0o644)
	run := filepath.Join(dir, "run")
	plot := filepath.Join(dir, "audit.png")
	out, _, err := runDptrain(t, "audit", "--config", cfg, "--set", "output.dir="+run, "--set", "privacy.accountants=[rdp]",
		"--canaries", "100", "--threat", "all-iterates", "--json", "--no-progress", "--plot", plot)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Threat   string
		Canaries int
		Bound    struct {
			Epsilon    float64 `json:"epsilon_lower"`
			Confidence float64
		}
		Modes []struct {
			Mode, Label, Verdict string
			Epsilon              float64
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, out)
	}
	if rep.Threat != "all-iterates" || rep.Canaries != 100 || rep.Bound.Confidence != 0.95 || len(rep.Modes) != 1 ||
		rep.Modes[0].Label != "certified" || rep.Bound.Epsilon > rep.Modes[0].Epsilon {
		t.Errorf("report %+v", rep)
	}
	for _, f := range []string{plot, filepath.Join(run, AuditFile), rundir.PrivatePath(run, rundir.CheckpointFile), rundir.PrivatePath(run, rundir.MetricsJSONL)} {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(run, rundir.CheckpointFile)); err == nil {
		t.Errorf("the audit run left a checkpoint at the top of %s, outside private/", run)
	}
	out, _, err = runDptrain(t, "audit", "--config", cfg, "--set", "output.dir="+filepath.Join(dir, "run2"), "--canaries", "100", "--threat", "final-model", "--no-progress")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ε_lower = ", "final-model", "rdp", "certified", "not refuted", "never certify", "operator only", rundir.PrivatePath(filepath.Join(dir, "run2"))} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runDptrain(t, "audit", "--config", cfg, "--set", "output.dir="+filepath.Join(dir, "run3"), "--canaries", "100", "--guesses", "7", "--no-progress")
	if err != nil || !strings.Contains(out, "k₊ = 7, k₋ = 7; confidence split over 1 guess counts") {
		t.Errorf("--guesses 7: %v\n%s", err, out)
	}
	if _, _, err := runDptrain(t, "audit", "--config", cfg, "--set", "output.dir="+filepath.Join(dir, "run4"), "--canaries", "100", "--guesses", "60", "--no-progress"); err == nil || !strings.Contains(err.Error(), "k₊ + k₋ ≤ m") {
		t.Errorf("--guesses 60 of 100 canaries: %v", err)
	}
	if _, _, err := runDptrain(t, "audit", "--config", cfg, "--threat", "sideways"); err == nil || !strings.Contains(err.Error(), "--threat") {
		t.Errorf("unknown threat: %v", err)
	}
}

// The README's tour trains a config, then audits the same config: the audit writes into its
// own directory (the config's output.dir with "-audit") and leaves the training run alone.
func TestAuditBesideTheConfigsRun(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(synthConfig+"output: {dir: "+run+"}\n"), 0o644)
	if _, _, err := runDptrain(t, "train", "--config", cfg, "--no-progress"); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(run, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := runDptrain(t, "audit", "--config", cfg, "--set", "privacy.accountants=[rdp]", "--canaries", "100",
		"--threat", "all-iterates", "--no-progress"); err != nil {
		t.Fatalf("audit of a config whose run exists: %v", err)
	}
	if _, err := os.Stat(filepath.Join(run+"-audit", AuditFile)); err != nil {
		t.Errorf("no %s in %s-audit: %v", AuditFile, run, err)
	}
	if after, err := os.ReadFile(filepath.Join(run, "summary.json")); err != nil || string(after) != string(before) {
		t.Errorf("the audit changed the training run's summary.json (%v)", err)
	}
}
