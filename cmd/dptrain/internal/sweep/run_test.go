package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/rundir"
)

// TestMain doubles as the worker process of RunLocal: with SWEEP_TEST_DIR set, the test binary
// runs one cell, as `dptrain sweep run-cell` does, and exits.
func TestMain(m *testing.M) {
	if dir := os.Getenv("SWEEP_TEST_DIR"); dir != "" {
		os.Exit(runCellProcess(dir, os.Getenv("SWEEP_TEST_INDEX")))
	}
	os.Exit(m.Run())
}

func runCellProcess(dir, index string) int {
	// As dptrain sweep run-cell: SIGTERM checkpoints the cell.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	fmt.Printf("OPENBLAS_NUM_THREADS=%s\nGOMAXPROCS=%s\n", os.Getenv("OPENBLAS_NUM_THREADS"), os.Getenv("GOMAXPROCS"))
	i, err := strconv.Atoi(index)
	var sum *train.Summary
	if err == nil {
		var p *Plan
		if p, err = LoadPlan(dir); err == nil {
			sum, err = RunCell(ctx, p, i, train.Options{})
		}
	}
	switch {
	case errors.Is(err, ErrLocked):
		fmt.Fprintln(os.Stderr, err)
		return ExitLocked
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		return 1
	case sum.Interrupted:
		fmt.Fprintln(os.Stderr, "interrupted")
		return 143
	}
	return 0
}

func testWorker(p *Plan) Worker {
	return func(ctx context.Context, i int) *exec.Cmd {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "SWEEP_TEST_DIR="+p.Dir(), "SWEEP_TEST_INDEX="+strconv.Itoa(i))
		return cmd
	}
}

func planTiny(t *testing.T, extra ...string) *Plan {
	t.Helper()
	s, err := LoadSuite("testdata/tiny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := MakePlan(s, t.TempDir(), extra)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRunLocalThenCollect(t *testing.T) {
	p := planTiny(t)
	rep, err := RunLocal(context.Background(), p, 2, testWorker(p))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Ran != 4 || rep.Failed != 0 || rep.Unavailable != 2 || rep.Skipped != 0 {
		t.Fatalf("report %+v, want 4 ran, 2 unavailable", rep)
	}
	log, err := os.ReadFile(filepath.Join(p.CellDir(0), LogFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := "GOMAXPROCS=" + strconv.Itoa(Threads(2)) + "\n"; !strings.Contains(string(log), want) {
		t.Errorf("worker log %q lacks %s: the CPUs are not divided among the workers", log, want)
	}
	// A second run finds every cell finished.
	if rep, err = RunLocal(context.Background(), p, 2, testWorker(p)); err != nil || rep.Skipped != 4 || rep.Ran != 0 {
		t.Fatalf("second run: %+v, %v; want 4 skipped", rep, err)
	}

	r, err := Collect(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Groups) != 3 {
		t.Fatalf("%d groups, want 3 (dp-sgd, dp-sgd-sgd, future)", len(r.Groups))
	}
	for _, g := range r.Groups[:2] {
		if g.Seeds != 2 || g.Steps != 20 || g.AccuracyMean <= 0.2 || len(g.Epsilon) != 2 {
			t.Errorf("group %s: %+v; want 2 seeds of 20 steps, accuracy above chance (0.2 for 5 classes?), ε in two modes", g.name(), g)
		}
		var accs []float64
		for _, c := range r.Cells {
			if k, _ := groupKey(c.Cell); c.Summary != nil && k == g.name() {
				accs = append(accs, c.Summary.TestAccuracy)
			}
		}
		if m, s := meanStd(accs); len(accs) != 2 || m != g.AccuracyMean || s != g.AccuracyStd {
			t.Errorf("group %s: mean ± std %g ± %g, cells give %v", g.name(), g.AccuracyMean, g.AccuracyStd, accs)
		}
	}
	// Every finished cell's ε curve is read from its run's private/ metrics.
	for _, c := range r.Cells {
		if c.Summary != nil && (len(c.Curve) != 2 || len(c.Curve["rdp"]) == 0) {
			t.Errorf("cell %d: ε curve %v, want rdp and pld from %s", c.Index, c.Curve, rundir.PrivatePath(p.RunDir(c.Index), rundir.MetricsJSONL))
		}
	}
	if r.Groups[2].Unavailable != "not written yet" {
		t.Errorf("unavailable group: %+v", r.Groups[2])
	}
	if err := WriteResults(p.Dir(), r); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(p.Dir(), ResultsMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	// Every cell is seeded: the tables mark the groups not private. Their timing comes from
	// each run's private/ (summary.json does not publish it).
	for _, g := range r.Groups[:2] {
		if g.NotPrivate != 2 || !(g.MsPerStep > 0) {
			t.Errorf("group %s: %d cells not private, %g ms/step; want 2 seeded cells and the timing from private/", g.name(), g.NotPrivate, g.MsPerStep)
		}
	}
	for _, want := range []string{"| dp-sgd | 2/2 |", "(certified)", "ε rdp", "ε pld", "not yet available: not written yet", "| published |", "| 42% (a made-up paper) |", PrivacyNote,
		"| private |", "**NO** (2/2 seeded)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
	csv, err := os.ReadFile(filepath.Join(p.Dir(), ResultsCSV))
	if err != nil {
		t.Fatal(err)
	}
	// header, 4 cells × 2 modes, 2 unavailable cells
	if n := strings.Count(string(csv), "\n"); n != 1+8+2 {
		t.Errorf("results.csv has %d lines, want 11:\n%s", n, csv)
	}
	if !strings.Contains(string(csv), ",private\n") || strings.Count(string(csv), ",no (seeded)\n") != 8 {
		t.Errorf("results.csv does not mark the 8 rows of seeded cells not private:\n%s", csv)
	}
	for _, f := range []string{PlotAccuracy, PlotEpsilon, ResultsJSON} {
		if st, err := os.Stat(filepath.Join(p.Dir(), f)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
}

func TestCollectListsFailedAndMissingCells(t *testing.T) {
	// Cell 0 fails when it starts (its data directory does not exist); the others never run.
	p := planTiny(t)
	bad := p.ConfigFile(0)
	b, err := os.ReadFile(bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(strings.NewReplacer("dataset: synthetic-mixture", "dataset: mnist", `dir: ""`, "dir: /nonexistent/mnist").Replace(string(b))), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := RunCell(context.Background(), p, 0, train.Options{}); err == nil {
		t.Fatal("cell 0 ran without its data")
	}
	r, err := Collect(p)
	if err != nil {
		t.Fatal(err)
	}
	ps := r.Problems()
	if len(ps) != 4 || ps[0].Status != StatusFailed || !strings.Contains(ps[0].Error, "/nonexistent/mnist") || ps[1].Status != StatusMissing {
		t.Fatalf("problems %+v: want cell 0 failed naming its directory, cells 1-3 missing", ps)
	}
	var md strings.Builder
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "- 0 dp-sgd_1: failed: ") || !strings.Contains(md.String(), "- 3 dp-sgd-sgd_2: missing: ") {
		t.Errorf("results.md does not list the failed and missing cells:\n%s", md.String())
	}
	if _, err := RunCell(context.Background(), p, 4, train.Options{}); err == nil || !strings.Contains(err.Error(), "not written yet") {
		t.Errorf("running an unavailable cell: %v", err)
	}
	if _, err := RunCell(context.Background(), p, 6, train.Options{}); err == nil || !strings.Contains(err.Error(), "cells 0 to 5") {
		t.Errorf("running cell 6 of 6: %v", err)
	}
}

var resumeSets = []string{"privacy.accountants=[rdp]", "training.steps=300", "training.checkpoint_every=10", "training.eval_every=0"}

// TestResumeAfterKill kills a worker with SIGKILL after its first checkpoint and runs the plan
// again: the cell resumes (the ledger continues, with the steps run after the checkpoint) and
// ends where an uninterrupted twin ends.
func TestResumeAfterKill(t *testing.T) {
	p := planTiny(t, resumeSets...)
	ckpt := rundir.PrivatePath(p.RunDir(0), rundir.CheckpointFile)
	cmd := testWorker(p)(context.Background(), 0)
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
			t.Fatal("no checkpoint within 60 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if p.Done(0) {
		t.Fatal("the cell finished before it could be killed: give it more steps")
	}
	c, err := rundir.LoadCheckpoint(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	killedAt := c.Header.Step
	if killedAt <= 0 || killedAt >= 300 {
		t.Fatalf("killed at step %d", killedAt)
	}
	// Run the killed cell again, and the same cell of a fresh plan without interruption.
	sum, err := RunCell(context.Background(), p, 0, train.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fresh := planTiny(t, resumeSets...)
	want, err := RunCell(context.Background(), fresh, 0, train.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 300 || len(sum.Epsilon) != len(want.Epsilon) {
		t.Fatalf("resumed run: %d steps, ε %+v; want 300 steps, ε %+v", sum.Steps, sum.Epsilon, want.Epsilon)
	}
	// The steps the kill cut off after the checkpoint ran on the data: the ledger keeps them.
	if sum.LedgerSteps != 300+sum.AbandonedSteps {
		t.Errorf("ledger of %d steps, %d abandoned: want 300 plus the abandoned", sum.LedgerSteps, sum.AbandonedSteps)
	}
	for k := range want.Epsilon {
		if got, w := sum.Epsilon[k].Epsilon, want.Epsilon[k].Epsilon; got < w || (sum.AbandonedSteps == 0 && got != w) {
			t.Errorf("mode %s: ε %g after a kill at step %d (%d steps abandoned), %g uninterrupted: the ledger did not continue", want.Epsilon[k].Mode, got, killedAt, sum.AbandonedSteps, w)
		}
	}
	if sum.TestAccuracy != want.TestAccuracy {
		t.Errorf("accuracy %g after a kill at step %d, %g uninterrupted: the resumed run is not the same run", sum.TestAccuracy, killedAt, want.TestAccuracy)
	}
}

func TestACellRunsInOneProcessAtATime(t *testing.T) {
	p := planTiny(t)
	release, err := lockCell(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if _, err := RunCell(context.Background(), p, 0, train.Options{}); !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "running elsewhere") {
		t.Fatalf("second runner of a locked cell: %v", err)
	}
}
