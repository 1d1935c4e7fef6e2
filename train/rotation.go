package train

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dptrain/dptrain/train/rundir"
)

// Checkpoint rotation. Every checkpoint is written to its own file, checkpoint-<step>.dpt in the
// run's rundir.PrivateDir, and checkpoint.dpt there is made to point at the newest (a hard link, or a
// copy where links are not supported). The newest training.keep_checkpoints step files are kept, so that a damaged
// newest file still leaves an older one to resume from with --resume-from.

// checkpointSink wraps the writer of a checkpoint's temporary file: tests replace it to fill
// the disk.
var checkpointSink = func(w io.Writer) io.Writer { return w }

// checkpoint writes the run's state after step and rotates the kept checkpoints.
func (t *Trainer) checkpoint(step int) error {
	dir := rundir.PrivatePath(t.cfg.Output.Dir)
	if err := t.checkRunDir(); err != nil {
		return err
	}
	if t.ledger != nil {
		// The ledger reaches the disk before the checkpoint that follows its steps.
		if err := t.ledger.Sync(); err != nil {
			return err
		}
	}
	c, err := t.snapshotCheckpoint(step)
	if err != nil {
		return err
	}
	stepPath := filepath.Join(dir, rundir.StepCheckpointName(step))
	if err := rundir.SaveCheckpointThrough(stepPath, c, checkpointSink); err != nil {
		return err
	}
	latest := filepath.Join(dir, rundir.CheckpointFile)
	tmp := filepath.Join(dir, fmt.Sprintf(".%s.tmp-link-%d", rundir.CheckpointFile, time.Now().UnixNano()))
	if err := os.Link(stepPath, tmp); err == nil {
		if err := os.Rename(tmp, latest); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("checkpoint: %w", err)
		}
	} else if err := rundir.SaveCheckpointThrough(latest, c, checkpointSink); err != nil {
		return err
	}
	t.lastCheckpoint, t.lastStep = latest, step
	for _, old := range rundir.OlderCheckpoints(dir)[min(t.cfg.Training.KeepCheckpoints, len(rundir.OlderCheckpoints(dir))):] {
		if err := os.Remove(old); err != nil {
			t.log.Warnf("could not remove the old checkpoint %s: %v", old, err)
		}
	}
	return nil
}

// CheckpointError is a checkpoint that could not be saved (a full disk, a failing one): the
// run stops there. A checkpoint is written to a temporary file renamed into place, so the one
// saved before it is intact, and the privacy ledger on disk counts the steps after it.
type CheckpointError struct {
	// Step is the step whose checkpoint failed; Err why.
	Step int
	Err  error
	// Previous is the newest intact checkpoint ("" when none was saved: the run must start
	// again) and PreviousStep its step.
	Previous     string
	PreviousStep int
	// Config is the run's saved config, the one to resume it with; Resume, when the caller
	// sets it, the whole command that continues the run (dptrain train sets it).
	Config string
	Resume string
}

func (e *CheckpointError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "saving the checkpoint of step %d: %v", e.Step, e.Err)
	if errors.Is(e.Err, syscall.ENOSPC) {
		b.WriteString(" (the disk is full: free space on it, or move the run's directory, output.dir, to a disk with room)")
	}
	if e.Previous == "" {
		b.WriteString("; no checkpoint was saved before it, so the run must start again (training.checkpoint_every sets how often one is saved)")
		return b.String()
	}
	fmt.Fprintf(&b, "; the previous checkpoint, at step %d (%s), is intact and the privacy ledger counts the steps run after it. Continue with", e.PreviousStep, e.Previous)
	if e.Resume != "" {
		b.WriteString(":\n  " + e.Resume)
	} else {
		fmt.Fprintf(&b, " --resume and the run's config, %s", e.Config)
	}
	return b.String()
}

func (e *CheckpointError) Unwrap() error { return e.Err }

// checkpointFailed is the error of a checkpoint of step that could not be saved.
func (t *Trainer) checkpointFailed(step int, err error) error {
	return &CheckpointError{Step: step, Err: err, Previous: t.lastCheckpoint, PreviousStep: t.lastStep,
		Config: filepath.Join(t.cfg.Output.Dir, rundir.ConfigFile)}
}

// removeStaleTemps deletes the temporary files that writes killed half-way left in dir (the
// atomic writers' ".NAME.tmp-*" and the model's "model.dpm.tmp*").
func removeStaleTemps(dir string, log Logger) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !(strings.HasPrefix(n, ".") && strings.Contains(n, ".tmp-") || strings.HasPrefix(n, rundir.ModelFile+".tmp")) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, n)); err == nil {
			log.Infof("removed %s, left by a write that was killed", n)
		}
	}
}

// lastGood says where the run can be resumed from, for error messages.
func (t *Trainer) lastGood() string {
	if t.lastCheckpoint == "" {
		return "no checkpoint was written yet: the run must start again (training.checkpoint_every sets how often one is written)"
	}
	return "the last good checkpoint is " + t.lastCheckpoint
}

// elapsed is the training time of the run over every session.
func (t *Trainer) elapsed() float64 {
	if t.began.IsZero() {
		return t.elapsedBefore
	}
	return t.elapsedBefore + time.Since(t.began).Seconds()
}

// diverged is the error for a step whose loss, gradient or parameters are not finite; what
// says which.
func (t *Trainer) diverged(step int, what string) error {
	lr := t.cfg.Optimizer.LearningRate
	return fmt.Errorf("step %d of %d: %s: training diverged. Lower the learning rate, e.g. --set optimizer.learning_rate=%.3g (now %g); %s",
		step, t.total, what, lr/10, lr, t.lastGood())
}
