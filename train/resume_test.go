package train

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/rundir"
)

// crashAt returns a hook that fails the run after step n.
func crashAt(n int) Hook {
	return HookFunc(func(s *StepInfo) error {
		if s.Step == n {
			return errCrash
		}
		return nil
	})
}

// runUntilCrash runs the synthetic config into dir until step n (checkpoints every 10 steps).
func runUntilCrash(t *testing.T, dir string, n int, sets ...string) *config.Config {
	t.Helper()
	cfg, err := config.ParseConfig([]byte(synthetic), append([]string{"output.dir=" + dir}, sets...))
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(context.Background(), cfg, Options{Hooks: []Hook{crashAt(n)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); err == nil {
		t.Fatal("the run did not crash")
	}
	return cfg
}

func resume(t *testing.T, dir string, opts Options, sets ...string) (*Summary, error) {
	t.Helper()
	cfg, err := config.LoadConfig(filepath.Join(dir, rundir.ConfigFile), sets)
	if err != nil {
		t.Fatal(err)
	}
	opts.Resume = true
	tr, err := New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tr.Run(context.Background())
}

// The run's own config.yaml resumes it; a changed learning rate needs --allow-changes and is
// recorded; a changed clip norm is refused even then, naming the key.
func TestResumeFromSavedConfigAndAllowChanges(t *testing.T) {
	dir := t.TempDir()
	runUntilCrash(t, dir, 15)
	if _, err := resume(t, dir, Options{}, "optimizer.learning_rate=0.1"); err == nil ||
		!strings.Contains(err.Error(), "optimizer.learning_rate: 0.2 → 0.1") || !strings.Contains(err.Error(), "--allow-changes") {
		t.Errorf("changed learning rate without --allow-changes: %v", err)
	}
	if _, err := resume(t, dir, Options{AllowChanges: true}, "optimizer.clip_norm=2"); err == nil || !strings.Contains(err.Error(), "optimizer.clip_norm: 1 → 2") {
		t.Errorf("changed clip norm: %v, want a refusal naming optimizer.clip_norm", err)
	}
	sum, err := resume(t, dir, Options{AllowChanges: true}, "optimizer.learning_rate=0.1")
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 30 || len(sum.ChangedOnResume) != 1 || !strings.HasPrefix(sum.ChangedOnResume[0], "optimizer.learning_rate") {
		t.Errorf("summary: %d steps, changes %q", sum.Steps, sum.ChangedOnResume)
	}

	dir = t.TempDir()
	runUntilCrash(t, dir, 15)
	if _, err := resume(t, dir, Options{}); err != nil {
		t.Errorf("resume from the run's own config.yaml: %v", err)
	}
}

func TestResumeWithoutCheckpointIsAnError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "never-ran")
	cfg, _ := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + dir})
	// Refused before the data are read.
	if _, err := New(context.Background(), cfg, Options{Resume: true}); err == nil || !strings.Contains(err.Error(), "no checkpoint") {
		t.Errorf("--resume without a checkpoint: %v", err)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Error("--resume without a checkpoint created the output directory")
	}
}

// The last keep_checkpoints step checkpoints are kept, checkpoint.dpt is the newest, an older
// one resumes with ResumeFrom, and temporaries of killed writes are removed at start-up.
func TestKeepsLastCheckpointsAndRemovesTemps(t *testing.T) {
	dir := t.TempDir()
	runUntilCrash(t, dir, 25)
	got := rundir.OlderCheckpoints(rundir.PrivatePath(dir))
	want := []string{rundir.PrivatePath(dir, "checkpoint-00000020.dpt"), rundir.PrivatePath(dir, "checkpoint-00000010.dpt")}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("kept %v, want %v", got, want)
	}
	if c, err := rundir.LoadCheckpoint(rundir.PrivatePath(dir, rundir.CheckpointFile)); err != nil || c.Header.Step != 20 {
		t.Fatalf("checkpoint.dpt: %v, want step 20", err)
	}
	stale := []string{filepath.Join(rundir.PrivateDir, ".checkpoint.dpt.tmp-123"), filepath.Join(rundir.PrivateDir, ".metrics.jsonl.tmp-9"), rundir.ModelFile + ".tmp42"}
	for _, s := range stale {
		os.WriteFile(filepath.Join(dir, s), []byte("half"), 0o644)
	}
	// Damaged newest, written in place: checkpoint-00000020.dpt, the same file (a hard
	// link), is damaged with it and is not offered.
	os.WriteFile(rundir.PrivatePath(dir, rundir.CheckpointFile), []byte("DPTCKPT1 torn"), 0o644)
	if _, err := resume(t, dir, Options{}); err == nil || !strings.Contains(err.Error(), "checkpoint-00000010.dpt") {
		t.Errorf("damaged checkpoint.dpt: %v, want the error to name the older checkpoints", err)
	}
	sum, err := resume(t, dir, Options{ResumeFrom: want[1]})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 30 {
		t.Errorf("resumed from step 10: %d steps", sum.Steps)
	}
	for _, s := range stale {
		if _, err := os.Stat(filepath.Join(dir, s)); err == nil {
			t.Errorf("stale %s not removed", s)
		}
	}
}

// A torn last line of metrics.csv is cut on resume; elapsed_s continues across the resume.
func TestResumeRepairsTornMetricsAndContinuesElapsed(t *testing.T) {
	dir := t.TempDir()
	runUntilCrash(t, dir, 15)
	f, _ := os.OpenFile(rundir.PrivatePath(dir, rundir.MetricsCSV), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("16,0.8,240,0.3") // a write cut by a full disk
	f.Close()
	ck, _ := rundir.LoadCheckpoint(rundir.PrivatePath(dir, rundir.CheckpointFile))
	if !(ck.Header.ElapsedSec > 0) {
		t.Fatalf("checkpoint elapsed_s = %v", ck.Header.ElapsedSec)
	}
	if _, err := resume(t, dir, Options{}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(rundir.PrivatePath(dir, rundir.MetricsCSV))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 31 || !strings.HasPrefix(lines[11], "11,") || !strings.HasPrefix(lines[30], "30,") {
		t.Errorf("metrics.csv has %d lines (want a header and 30 rows, one per step):\n%s", len(lines), b)
	}
	jf, _ := os.Open(rundir.PrivatePath(dir, rundir.MetricsJSONL))
	defer jf.Close()
	sc := bufio.NewScanner(jf)
	for sc.Scan() {
		var rec struct {
			Step       int
			ElapsedSec float64 `json:"elapsed_s"`
		}
		json.Unmarshal(sc.Bytes(), &rec)
		if rec.Step == 11 && rec.ElapsedSec < ck.Header.ElapsedSec {
			t.Errorf("step 11's elapsed_s %v restarts below the checkpoint's %v", rec.ElapsedSec, ck.Header.ElapsedSec)
		}
	}
}

func TestDivergenceWithoutCheckpointSaysSo(t *testing.T) {
	tr, _ := newTrainer(t, "optimizer.learning_rate=1e38", "optimizer.clip_norm=1e30", "optimizer.noise_multiplier=1e-30", "training.checkpoint_every=0")
	_, err := tr.Run(context.Background())
	if err == nil {
		t.Fatal("a diverging run did not fail")
	}
	// The overflow surfaces as non-finite parameters after the noisy update: a released value,
	// the only divergence that stops a run (a per-example overflow is clipped to zero).
	for _, want := range []string{"parameters are not finite", "optimizer.learning_rate", "no checkpoint was written yet"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if m := regexp.MustCompile(`^step (\d+) of 30: `).FindStringSubmatch(err.Error()); m == nil {
		t.Errorf("error %q numbers the step inconsistently", err)
	}
}

// A disk that fills up during a checkpoint stops the run with an error that says so, names
// the previous checkpoint, which stays intact (the new one is written to a temporary file that
// is removed), and says how to continue; the run then resumes from it.
func TestFullDiskDuringCheckpoint(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full to fill the disk with: %v", err)
	}
	defer full.Close()
	for _, test := range []struct {
		name     string
		fullFrom int // the checkpoint (1: the first) from which the disk is full
		want     []string
	}{
		{"after two checkpoints", 3, []string{"saving the checkpoint of step 30", "no space left on device", "the disk is full",
			"the previous checkpoint, at step 20", "is intact", "Continue with --resume and the run's config"}},
		{"at the first", 1, []string{"saving the checkpoint of step 10", "no space left on device", "no checkpoint was saved before it, so the run must start again"}},
	} {
		t.Run(test.name, func(t *testing.T) {
			n := 0
			checkpointSink = func(w io.Writer) io.Writer {
				if n++; n >= test.fullFrom {
					return full
				}
				return w
			}
			defer func() { checkpointSink = func(w io.Writer) io.Writer { return w } }()
			dir := t.TempDir()
			cfg, err := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + dir, "training.steps=40"})
			if err != nil {
				t.Fatal(err)
			}
			tr, err := New(context.Background(), cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = tr.Run(context.Background())
			var ce *CheckpointError
			if !errors.As(err, &ce) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("a full disk during a checkpoint: %v, want a *CheckpointError with ENOSPC", err)
			}
			for _, w := range test.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error %q does not say %q", err, w)
				}
			}
			temps, _ := filepath.Glob(rundir.PrivatePath(dir, ".*.tmp-*"))
			if len(temps) > 0 {
				t.Errorf("the failed checkpoint left %v", temps)
			}
			if test.fullFrom == 1 {
				return
			}
			if c, err := rundir.LoadCheckpoint(rundir.PrivatePath(dir, rundir.CheckpointFile)); err != nil || c.Header.Step != 20 {
				t.Fatalf("checkpoint.dpt after the failed checkpoint: %v, want step 20 intact", err)
			}
			checkpointSink = func(w io.Writer) io.Writer { return w } // space freed
			sum, err := resume(t, dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if sum.Steps != 40 || sum.LedgerSteps != 40+sum.AbandonedSteps || sum.AbandonedSteps != 10 {
				t.Errorf("resumed: %d steps, ledger %d (%d abandoned); want 40 and the 10 steps after the intact checkpoint counted", sum.Steps, sum.LedgerSteps, sum.AbandonedSteps)
			}
		})
	}
}
