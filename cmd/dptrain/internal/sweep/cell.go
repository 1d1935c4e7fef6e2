package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/rundir"
)

// ErrUnavailable is returned by RunCell for a cell whose value is marked unavailable in the
// suite.
var ErrUnavailable = errors.New("cell not available")

// ErrInterrupted is returned by RunCell for a cell whose context was cancelled before its
// training started: nothing ran, and the next run starts it again. (A cell interrupted while
// training returns its summary with Interrupted set: it saved a checkpoint.)
var ErrInterrupted = errors.New("interrupted")

// Done reports whether cell i has finished (its run wrote summary.json).
func (p *Plan) Done(i int) bool {
	_, err := os.Stat(filepath.Join(p.RunDir(i), rundir.SummaryFile))
	return err == nil
}

// RunCell trains cell i of the plan. A finished cell is not run again (its summary is
// returned); a cell with a checkpoint resumes from it, so its privacy ledger continues. A
// failure is also written to the cell's error.txt for Collect. A cell that another process
// runs gives ErrLocked; cancelling ctx stops the cell as a signal stops `dptrain train`: it
// checkpoints, and the summary it returns has Interrupted set (ErrInterrupted before training
// started). Neither is written to error.txt: such a cell has not failed. On the ranks of a
// data-parallel cell other than 0 (opts.Comm) it returns a nil summary.
func RunCell(ctx context.Context, p *Plan, i int, opts train.Options) (*train.Summary, error) {
	c, err := p.cell(i)
	if err != nil {
		return nil, err
	}
	if c.Unavailable != "" {
		return nil, fmt.Errorf("cell %d (%s): %w: %s", i, c.ID, ErrUnavailable, c.Unavailable)
	}
	// In a data-parallel cell (opts.Comm), rank 0 owns the cell: its lock, its error.txt.
	leader := opts.Comm == nil || opts.Comm.Rank() == 0
	if leader {
		release, err := lockCell(p, i)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	if p.Done(i) {
		return readSummary(filepath.Join(p.RunDir(i), rundir.SummaryFile))
	}
	sum, err := runCell(ctx, p, i, opts)
	errPath := filepath.Join(p.CellDir(i), ErrorFile)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("cell %d (%s): %w before training started (%v): nothing ran; run it again", i, c.ID, ErrInterrupted, err)
	}
	if err != nil && leader {
		if werr := data.WriteFileAtomic(errPath, func(w io.Writer) error {
			_, e := fmt.Fprintln(w, err)
			return e
		}); werr != nil {
			return nil, fmt.Errorf("%w (and writing %s: %v)", err, errPath, werr)
		}
		return nil, err
	}
	if sum == nil { // a rank other than 0: rank 0 reports
		return nil, err
	}
	if !sum.Interrupted {
		os.Remove(errPath)
	}
	return sum, nil
}

func runCell(ctx context.Context, p *Plan, i int, opts train.Options) (*train.Summary, error) {
	cfg, err := config.LoadConfig(p.ConfigFile(i), nil)
	if err != nil {
		return nil, err
	}
	if cfg.Output.Dir != p.RunDir(i) {
		return nil, fmt.Errorf("%s: output.dir is %s, the plan expects %s: the plan directory was moved; plan the suite again in its new place", p.ConfigFile(i), cfg.Output.Dir, p.RunDir(i))
	}
	_, err = os.Stat(rundir.PrivatePath(cfg.Output.Dir, rundir.CheckpointFile))
	opts.Resume = err == nil
	t, err := train.New(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	return t.Run(ctx)
}

func readSummary(path string) (*train.Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s := new(train.Summary)
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
