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
