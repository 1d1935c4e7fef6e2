package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/sweep"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/rundir"
)

// ciSized shrinks benchmarks/suites/optimizers-fmnist.yaml to a CI-sized run: 2000 training
// examples, batch 256, one epoch.
var ciSized = []string{"--set", "data.train_subset=2000", "--set", "data.test_subset=1000", "--set", "optimizer.batch_size=256", "--set", "training.epochs=1"}

// slurmTiny is a 4-cell suite (2 variants × 2 seeds) on the synthetic mixture.
const (
	slurmTinyConfig = `name: tiny
data: {dataset: synthetic-mixture, normalize: none}
model: {kind: mlp, hidden: [16], activation: tanh}
optimizer: {algorithm: dp-sgd, update: momentum, momentum: 0.9, learning_rate: 0.2, batch_size: 240, clip_norm: 1, noise_multiplier: 1.0}
privacy: {delta: 1.0e-5, accountants: [rdp]}
training: {steps: 20, checkpoint_every: 10}
output: {dir: unused}
`
	slurmTinySuite = `name: slurm-tiny
config: base.yaml
axes:
  - name: algorithm
    values:
      - label: dp-sgd
      - label: dp-sgd-plain
        set: [optimizer.update=sgd, optimizer.learning_rate=1]
seeds: [1, 2]
`
)

// planSuite writes base.yaml (slurmTinyConfig) and suite.yaml into a temporary directory, plans
// the suite and returns the plan directory.
func planSuite(t *testing.T, suite string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{"base.yaml": slurmTinyConfig, "suite.yaml": suite} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plan := filepath.Join(dir, "plan")
	if _, _, err := runDptrain(t, "sweep", "plan", filepath.Join(dir, "suite.yaml"), "--out", plan); err != nil {
		t.Fatal(err)
	}
	return plan
}

// cellLineRE matches the line `sweep run` prints for a finished cell.
var cellLineRE = regexp.MustCompile(`(?m)^\[(\d)/4\] cell (\d) (dp-sgd|dp-sgd-plain)_[12]: finished, accuracy \d+\.\d\d%, ε [0-9.e+-]+ \(rdp, certified\), seeded: not private, [0-9.]+m?s; (\d) left(, ETA \d+s)?$`)

// `sweep run` prints one line per cell as it ends: the cell, its accuracy and ε, its time, the
// cells left and an estimate of the time left.
func TestSweepRunPrintsALinePerCell(t *testing.T) {
	t.Setenv(asMainEnv, "1") // the workers are this test binary acting as dptrain
	plan := planSuite(t, slurmTinySuite)
	out, _, err := runDptrain(t, "sweep", "run", plan, "--workers", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := cellLineRE.FindAllStringSubmatch(out, -1)
	if len(lines) != 4 {
		t.Fatalf("%d per-cell lines, want 4 (one per cell):\n%s", len(lines), out)
	}
	eta := false
	for k, l := range lines {
		if l[1] != strconv.Itoa(k+1) || l[4] != strconv.Itoa(3-k) {
			t.Errorf("line %d: %q: want [%d/4] and %d left", k, l[0], k+1, 3-k)
		}
		eta = eta || l[5] != ""
	}
	if !eta || lines[3][5] != "" {
		t.Errorf("want an ETA before the last cell and none on it:\n%s", out)
	}
}

// A cell that another process holds (its flock) is running elsewhere, not failed.
func TestSweepRunLockedCellIsRunningElsewhere(t *testing.T) {
	t.Setenv(asMainEnv, "1")
	plan := planSuite(t, slurmTinySuite)
	p, err := sweep.LoadPlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(p.CellDir(0), sweep.LockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	out, _, err := runDptrain(t, "sweep", "run", plan, "--workers", "2")
	if err != nil || strings.Contains(out, "1 failed") {
		t.Errorf("a cell held by another runner made the run fail: %v\n%s", err, out)
	}
	for _, want := range []string{"cell 0 dp-sgd_1: running elsewhere", "3 ran, 0 skipped (finished before), 0 failed, 0 not yet available, 1 running elsewhere"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(p.CellDir(0), sweep.ErrorFile)); err == nil {
		t.Errorf("the cell running elsewhere got an %s", sweep.ErrorFile)
	}
}

const longSuite = `name: long
config: base.yaml
set: [training.steps=4000, training.checkpoint_every=10]
axes:
  - name: algorithm
    values:
      - label: dp-sgd
      - label: dp-sgd-b
        set: [optimizer.learning_rate=0.1]
`

// startAndStop starts this test binary as `dptrain ARGS...`, waits for ckpt to appear, sends
// sig and returns the process's exit status, stdout and stderr.
func startAndStop(t *testing.T, ckpt string, sig syscall.Signal, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr strings.Builder
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(ckpt); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("no checkpoint within 60 s:\n%s\n%s", &stdout, &stderr)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(sig)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatalf("dptrain %s did not stop within 60 s of %v", strings.Join(args, " "), sig)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// Ctrl-C on `sweep run` stops it with "interrupted": each running cell gets SIGTERM, saves a
// checkpoint and gets its line, with its stop accountant's ε so far; it is not marked failed,
// and the next `sweep run` resumes it (its ledger continues).
func TestSweepRunInterruptCheckpointsAndResumes(t *testing.T) {
	plan := planSuite(t, longSuite)
	p, err := sweep.LoadPlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	run := p.RunDir(0)
	status, out, errOut := startAndStop(t, rundir.PrivatePath(run, rundir.CheckpointFile), syscall.SIGINT, "sweep", "run", plan, "--workers", "2")
	if p.Done(0) {
		t.Fatal("the cell finished before the interruption: give it more steps")
	}
	// The command to resume names the program as it was started: here this test binary.
	if status != 130 || !strings.Contains(errOut, "interrupted") || !strings.Contains(errOut, os.Args[0]+" sweep run "+plan) {
		t.Errorf("after SIGINT: status %d, stderr %q; want 130, \"interrupted\" and the command to resume", status, errOut)
	}
	if !regexp.MustCompile(`(?m)^\[\d/2\] cell 0 dp-sgd: interrupted, checkpoint at step \d+, so far ε [0-9.e+-]+ \(rdp, certified\), `).MatchString(out) ||
		!regexp.MustCompile(`(?m)^\[\d/2\] cell 1 dp-sgd-b: interrupted, (checkpoint at step \d+, so far ε [0-9.e+-]+ \(rdp, certified\), |no checkpoint yet)`).MatchString(out) ||
		strings.Contains(out, "1 failed") {
		t.Errorf("after SIGINT, stdout:\n%s\nwant both running cells interrupted, each with its line, its checkpoint and ε so far, nothing failed", out)
	}
	if _, err := os.Stat(rundir.PrivatePath(run, rundir.InterruptedSummaryFile)); err != nil {
		t.Errorf("the cell did not stop as train does on SIGTERM (no %s): %v", rundir.InterruptedSummaryFile, err)
	}
	if _, err := os.Stat(filepath.Join(p.CellDir(0), sweep.ErrorFile)); err == nil {
		t.Errorf("the interrupted cell got an %s: collect would call it failed", sweep.ErrorFile)
	}
	t.Setenv(asMainEnv, "1")
	out, _, err = runDptrain(t, "sweep", "run", plan)
	if err != nil || !strings.Contains(out, "cell 0 dp-sgd: finished") || !strings.Contains(out, "cell 1 dp-sgd-b: finished") {
		t.Fatalf("resuming: %v\n%s", err, out)
	}
	var sum train.Summary
	b, err := os.ReadFile(filepath.Join(run, rundir.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 4000 || sum.LedgerSteps != 4000+sum.AbandonedSteps {
		t.Errorf("resumed cell: %d steps, ledger of %d (%d abandoned); want 4000 steps and the ledger continued", sum.Steps, sum.LedgerSteps, sum.AbandonedSteps)
	}
}

// `run-cell` checkpoints on SIGTERM, which Slurm sends before a requeue or at the time limit,
// and exits with 143 as train does.
func TestSweepRunCellCheckpointsOnSIGTERM(t *testing.T) {
	plan := planSuite(t, longSuite)
	p, err := sweep.LoadPlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	run := p.RunDir(0)
	status, _, errOut := startAndStop(t, rundir.PrivatePath(run, rundir.CheckpointFile), syscall.SIGTERM, "sweep", "run-cell", plan, "--index", "0", "--no-progress")
	if status != 143 || !strings.Contains(errOut, "interrupted at step") {
		t.Fatalf("after SIGTERM: exit status %d, stderr:\n%s\nwant 143 and the step of the checkpoint", status, errOut)
	}
	if _, err := os.Stat(rundir.PrivatePath(run, rundir.InterruptedSummaryFile)); err != nil {
		t.Errorf("no %s: the cell did not stop as train does: %v", rundir.InterruptedSummaryFile, err)
	}
	if _, err := os.Stat(filepath.Join(p.CellDir(0), sweep.ErrorFile)); err == nil {
		t.Errorf("the interrupted cell got an %s", sweep.ErrorFile)
	}
}

// A suite may name its base config by absolute path.
func TestSweepPlanAbsoluteConfig(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "configs", "base.yaml")
	if err := os.MkdirAll(filepath.Dir(base), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base, []byte(slurmTinyConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := planSuite(t, strings.Replace(slurmTinySuite, "config: base.yaml", "config: "+base, 1))
	t.Setenv(asMainEnv, "1")
	if out, _, err := runDptrain(t, "sweep", "run", plan, "--workers", "2"); err != nil || !strings.Contains(out, "4 ran") {
		t.Errorf("a suite with an absolute config path: %v\n%s", err, out)
	}
}
