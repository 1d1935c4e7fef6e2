package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A finished run resumed runs no step: the summary says so instead of "0.0 ms/step".
func TestResumedFinishedRunPrintsNoZeroTiming(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(synthConfig), 0o644)
	run := filepath.Join(dir, "run")
	if _, _, err := runDptrain(t, "train", "--config", cfg, "--no-progress", "--set", "output.dir="+run); err != nil {
		t.Fatal(err)
	}
	out, _, err := runDptrain(t, "train", "--config", filepath.Join(run, "config.yaml"), "--resume", "--no-progress")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "0.0 ms/step") || !strings.Contains(out, "no step ran in this session") {
		t.Errorf("summary of a finished run resumed:\n%s", out)
	}
}

// DP-SGLD clips nothing: its summary line gives the Lipschitz constant L, not C = 0.
func TestDPSGLDSummaryPrintsLipschitzConstant(t *testing.T) {
	if _, err := os.Stat("/usr/share/datasets/fashion-mnist"); err != nil {
		t.Skip("Fashion-MNIST is not installed")
	}
	run := filepath.Join(t.TempDir(), "run")
	out, _, err := runDptrain(t, "train", "--config", "../../configs/fmnist-logreg-dpsgld.yaml", "--no-progress",
		"--set", "output.dir="+run, "--set", "training.steps=2", "--set", "data.dir=/usr/share/datasets/fashion-mnist")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "C = 0") || !strings.Contains(out, ", L = ") {
		t.Errorf("DP-SGLD summary:\n%s", out)
	}
}

// --resume verifies the run's privacy ledger against its checkpoint's record of it: a ledger
// deleted, cut short or edited stops the resume, naming the damage, instead of yielding a
// smaller ε; put back as it was, the ledger resumes again.
func TestResumeRefusesDamagedLedger(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(synthConfig), 0o644)
	run := filepath.Join(dir, "run")
	if _, _, err := runDptrain(t, "train", "--config", cfg, "--no-progress", "--set", "output.dir="+run); err != nil {
		t.Fatal(err)
	}
	ledger := filepath.Join(run, "private", "ledger.jsonl")
	honest, err := os.ReadFile(ledger)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(honest), "\n")
	for _, c := range []struct {
		name   string
		ledger string // "": no file
		want   string // "": the resume succeeds
	}{
		{"untampered", string(honest), ""},
		{"deleted", "", "is damaged (missing)"},
		{"truncated", strings.Join(lines[:10], ""), "is damaged (truncated, line 11)"},
		{"sigma edited", strings.Join(lines[:1], "") + strings.Replace(lines[1], `"NoiseMultiplier":1,`, `"NoiseMultiplier":100,`, 1) + strings.Join(lines[2:], ""), "is damaged (edited, line 2)"},
		{"put back", string(honest), ""},
	} {
		os.Remove(ledger)
		if c.ledger != "" {
			os.WriteFile(ledger, []byte(c.ledger), 0o600)
		}
		_, _, err := runDptrain(t, "train", "--config", filepath.Join(run, "config.yaml"), "--resume", "--no-progress")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "restore private/ledger.jsonl from a backup")):
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
