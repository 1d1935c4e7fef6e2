package train

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/dptrain/dptrain/train/rundir"
)

// prepareRunDir checks output.dir before anything is loaded, and locks it for the run:
//   - a directory written by a dptrain before private/ existed is refused (rundir.LegacyLayout);
//   - --resume needs the checkpoint to continue from;
//   - a new run needs an absent or empty directory, or a dptrain run directory without a
//     checkpoint (one whose earlier start failed before its first step): files of the
//     user's in output.dir (a config.yaml, a summary.json of their own) are never replaced.
func (t *Trainer) prepareRunDir() error {
	out := t.cfg.Output.Dir
	if strings.TrimSpace(out) == "" {
		return errors.New("output.dir is empty: set it to the run's directory, e.g. --set output.dir=runs/NAME")
	}
	if err := rundir.LegacyLayout(out); err != nil {
		return err
	}
	from := rundir.PrivatePath(out, rundir.CheckpointFile)
	if t.opts.ResumeFrom != "" {
		from = t.opts.ResumeFrom
	}
	if t.opts.Resume {
		if _, err := os.Stat(from); err != nil {
			return fmt.Errorf("--resume: there is no checkpoint to continue from (%v): run without --resume to start, or set output.dir to the directory of the run to continue", err)
		}
	} else if err := rundir.CheckNew(out); err != nil {
		if rundir.IsRunDir(out) {
			// A run directory with a checkpoint: that another process is running it now says
			// more than "pass --resume", which would then be refused as in use.
			if l, lerr := rundir.Acquire(rundir.PrivatePath(out), rundir.LockFile, "output.dir "+out); errors.Is(lerr, rundir.ErrLocked) {
				return lerr
			} else if lerr == nil {
				l.Release()
			}
		}
		return err
	}
	lock, err := rundir.Acquire(rundir.PrivatePath(out), rundir.LockFile, "output.dir "+out)
	if err != nil {
		return err
	}
	t.lock = lock
	if !t.opts.Resume {
		// Checked again under the lock: a run that started beside this one has written its
		// checkpoint by now, or holds the lock.
		if err := rundir.CheckNew(out); err != nil {
			t.Close()
			return err
		}
	}
	if err := rundir.MakePrivateDir(out); err != nil {
		t.Close()
		return err
	}
	return nil
}

// checkRunDir returns an error when the run's rundir.PrivateDir or its ledger is no longer the one
// this run holds (moved, removed or replaced while it runs): checked after every step and
// before every checkpoint, so that no step goes unrecorded in the ledger a resume reads.
func (t *Trainer) checkRunDir() error {
	if err := t.lock.Check(); err != nil {
		return err
	}
	if t.ledger != nil {
		return runLedgerError(t.ledger.CheckFile())
	}
	return nil
}

// Close releases the run directory's lock. Run releases it when it returns; Close is for a
// Trainer that is prepared (New) and then not run. It may be called more than once.
func (t *Trainer) Close() {
	if t.lock != nil {
		t.lock.Release()
	}
}
