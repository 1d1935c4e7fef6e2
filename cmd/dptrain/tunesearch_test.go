package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/sweep"
	"github.com/dptrain/dptrain/cmd/dptrain/internal/tune"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/rundir"
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

// Ctrl-C on a running `dptrain tune` asks the running candidates to checkpoint and prints the
// command that continues; that command finishes the search with the K and candidates drawn the
// first time, resuming the interrupted candidate from its checkpoint (its ledger continues).
func TestTuneInterruptContinues(t *testing.T) {
	dir := t.TempDir()
	long := strings.Replace(slurmTinyConfig, "steps: 20, checkpoint_every: 10", "steps: 3000, checkpoint_every: 100", 1)
	if long == slurmTinyConfig {
		t.Fatal("slurmTinyConfig changed: lengthen its candidates here again")
	}
	base, space := writeTuneSearch(t, dir, long)
	out := filepath.Join(dir, "search")
	args := []string{"tune", "--config", base, "--space", space, "--out", out, "--workers", "2"}
	run := filepath.Join(out, tune.PrivateDir, tune.SweepDir, "cells", "000-c000", "run")
	status, _, errOut := startAndStop(t, rundir.PrivatePath(run, rundir.CheckpointFile), syscall.SIGINT, args...)
	if status != 130 || !strings.Contains(errOut, "search interrupted") || !strings.Contains(errOut, os.Args[0]+" "+strings.Join(args, " ")) {
		t.Fatalf("after SIGINT: status %d, stderr:\n%s\nwant 130 and the command that continues", status, errOut)
	}
	if _, err := os.Stat(filepath.Join(out, tune.SummaryFile)); err == nil {
		t.Fatal("the search finished before the interruption: give its candidates more steps")
	}
	if _, err := os.Stat(rundir.PrivatePath(run, rundir.InterruptedSummaryFile)); err != nil {
		t.Fatalf("the first candidate did not checkpoint on the interruption: %v", err)
	}
	drawn := readTuneState(t, out)

	t.Setenv(asMainEnv, "1") // the workers are this test binary acting as dptrain
	printed, _, err := runDptrain(t, args...)
	if err != nil || !strings.Contains(printed, "search: ε = ") || !strings.Contains(printed, "released: ") {
		t.Fatalf("continuing: %v\n%s", err, printed)
	}
	checkScoredAsDrawn(t, drawn, readTuneState(t, out))
	if sum := readJSONFile[train.Summary](t, filepath.Join(run, rundir.SummaryFile)); sum.Steps != 3000 || sum.LedgerSteps != 3000+sum.AbandonedSteps {
		t.Errorf("interrupted candidate: %d steps, ledger of %d (%d abandoned); want 3000 steps and the ledger continued", sum.Steps, sum.LedgerSteps, sum.AbandonedSteps)
	}
	if log, _ := os.ReadFile(filepath.Join(filepath.Dir(run), sweep.LogFile)); !strings.Contains(string(log), "resumed from") {
		t.Errorf("the interrupted candidate did not resume from its checkpoint:\n%s", log)
	}
}

// On Slurm, a failed candidate is counted and never submitted again, and `tune --slurm` run
// again writes the array for the unfinished candidates alone; until they finish, `tune` trains
// none of them here and says so. (TestSlurmTune runs such an array on a cluster.)
func TestTuneSlurmResubmitsOnlyUnfinished(t *testing.T) {
	dir := t.TempDir()
	base, space := writeTuneSearch(t, dir, slurmTinyConfig)
	out := filepath.Join(dir, "search")
	args := []string{"tune", "--config", base, "--space", space, "--out", out}
	slurm := append(append([]string(nil), args...), "--slurm", "--executable", "/opt/dptrain/bin/dptrain")
	if _, _, err := runDptrain(t, slurm...); err != nil {
		t.Fatal(err)
	}
	p, err := sweep.LoadPlan(filepath.Join(out, tune.PrivateDir, tune.SweepDir))
	if err != nil {
		t.Fatal(err)
	}
	arrayFile := filepath.Join(p.Dir(), sweep.SlurmDir, sweep.SlurmArray)
	array := func() string {
		b, err := os.ReadFile(arrayFile)
		if err != nil {
			t.Fatal(err)
		}
		return regexp.MustCompile(`#SBATCH --array=\S+`).FindString(string(b))
	}
	if got := array(); got != "#SBATCH --array=0,1,2,3" {
		t.Fatalf("first array: %q", got)
	}
	// As the array would have left it: candidate 0 finished, 1 failed, 2 and 3 cancelled.
	if _, _, err := runDptrain(t, "sweep", "run-cell", p.Dir(), "--index", "0", "--no-progress"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.CellDir(1), sweep.ErrorFile), []byte("simulated failure\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = runDptrain(t, args...)
	if err == nil || !strings.Contains(err.Error(), "2 candidates have not finished (c002 c003") || !strings.Contains(err.Error(), "with --slurm") {
		t.Fatalf("tune with unfinished candidates on Slurm: %v; want a refusal saying to submit them again", err)
	}
	if p.Done(2) || p.Done(3) {
		t.Fatal("tune trained a candidate of a search on Slurm here")
	}
	printed, _, err := runDptrain(t, slurm...)
	if err != nil || !strings.Contains(printed, "submit with: bash ") {
		t.Fatalf("tune --slurm again: %v\n%s", err, printed)
	}
	if got := array(); got != "#SBATCH --array=2,3" {
		t.Errorf("the array written again: %q; want the unfinished candidates alone", got)
	}
	if st := readTuneState(t, out); st.K != 4 || st.Candidates[1].Failed != "simulated failure" {
		t.Errorf("K = %d, candidate 1 %+v: want the failure counted", st.K, st.Candidates[1])
	}
}

// slurmTuneSpace is a seeded search of two learning rates with K ~ Poisson(2.5): seed 7 draws
// K = 4. A seeded search is NOT private; this one is for a test.
const slurmTuneSpace = `target_epsilon: 4
delta: 1.0e-5
seed: 7
candidates: {law: poisson, mean: 2.5}
validation: {fraction: 0.1, noise: 10}
parameters:
  - {key: optimizer.learning_rate, values: [0.1, 0.3]}
`

// writeTuneSearch writes the base config baseText and slurmTuneSpace into dir and returns
// their paths.
func writeTuneSearch(t *testing.T, dir, baseText string) (base, space string) {
	t.Helper()
	base, space = filepath.Join(dir, "base.yaml"), filepath.Join(dir, "space.yaml")
	for path, text := range map[string]string{base: baseText, space: slurmTuneSpace} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return base, space
}

// checkScoredAsDrawn checks that a finished search has the K and candidates it was drawn with,
// every candidate scored.
func checkScoredAsDrawn(t *testing.T, drawn, now tune.State) {
	t.Helper()
	if now.K != drawn.K || len(now.Candidates) != len(drawn.Candidates) {
		t.Fatalf("the search was drawn again: K %d → %d", drawn.K, now.K)
	}
	for i, c := range now.Candidates {
		if c.Score == nil || !slices.Equal(c.Set, drawn.Candidates[i].Set) || *c.Seed != *drawn.Candidates[i].Seed {
			t.Errorf("candidate %d: drawn %+v, now %+v", i, drawn.Candidates[i], c)
		}
	}
}

// readTuneState reads a search's private record.
func readTuneState(t *testing.T, out string) tune.State {
	t.Helper()
	return readJSONFile[tune.State](t, filepath.Join(out, tune.PrivateDir, tune.StateFile))
}

// readJSONFile decodes the JSON file at path.
func readJSONFile[T any](t *testing.T, path string) T {
	t.Helper()
	var v T
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}
