package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/rundir"
)

// SIGTERM (what schedulers and kill send) checkpoints and stops the run with status 143 and
// the command to continue; that command, with the run's own config.yaml, finishes the run.
func TestSIGTERMCheckpointsAndResumesFromSavedConfig(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	cfg := filepath.Join(dir, "c.yaml")
	os.WriteFile(cfg, []byte(synthConfig), 0o644)
	done := make(chan error, 1)
	go func() {
		_, _, err := runDptrain(t, "train", "--config", cfg, "--no-progress", "--set", "output.dir="+run,
			"--set", "training.steps=1000000", "--set", "training.checkpoint_every=50")
		done <- err
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(rundir.PrivatePath(run, rundir.CheckpointFile)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint after 60 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not stop within 60 s of SIGTERM")
	}
	var ee *exitError
	if !errors.As(err, &ee) || ee.status != 143 {
		t.Fatalf("after SIGTERM: %v, want exit status 143", err)
	}
	// The interrupted run's model is an intermediate iterate: it stays in private/.
	if _, err := os.Stat(filepath.Join(run, rundir.ModelFile)); err == nil {
		t.Errorf("an interrupted run wrote %s at the top of its directory, where it reads as publishable", rundir.ModelFile)
	}
	if _, err := os.Stat(rundir.PrivatePath(run, rundir.InterruptedModelFile)); err != nil {
		t.Errorf("the interrupted run's model is not in private/: %v", err)
	}
	saved := filepath.Join(run, "config.yaml")
	if !strings.Contains(err.Error(), "dptrain train --config "+saved+" --resume") {
		t.Errorf("message %q does not give the command to continue", err)
	}
	ck, err := rundir.LoadCheckpoint(rundir.PrivatePath(run, rundir.CheckpointFile))
	if err != nil {
		t.Fatal(err)
	}
	steps := fmt.Sprint(ck.Header.Step + 5)
	if _, _, err := runDptrain(t, "train", "--config", saved, "--resume", "--no-progress", "--set", "training.steps="+steps); err == nil ||
		!strings.Contains(err.Error(), "--allow-changes") {
		t.Errorf("resume with a changed run length and no --allow-changes: %v", err)
	}
	out, _, err := runDptrain(t, "train", "--config", saved, "--resume", "--no-progress", "--allow-changes", "--set", "training.steps="+steps, "--json")
	if err != nil {
		t.Fatalf("resume from the run's own config: %v", err)
	}
	var sum train.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.Steps != ck.Header.Step+5 || len(sum.ChangedOnResume) != 1 || sum.ChangedOnResume[0] != "training.steps: 1000000 → "+steps {
		t.Errorf("summary after resume: %v %+v", err, sum)
	}
	if _, err := os.Stat(filepath.Join(run, rundir.ModelFile)); err != nil {
		t.Errorf("the run resumed to its end wrote no %s: %v", rundir.ModelFile, err)
	}
	if _, _, err := runDptrain(t, "train", "--config", cfg, "--resume", "--set", "output.dir="+filepath.Join(dir, "none")); err == nil || !strings.Contains(err.Error(), "no checkpoint") {
		t.Errorf("--resume on a directory without a checkpoint: %v", err)
	}
}
