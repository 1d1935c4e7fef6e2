package sweep

import (
	"errors"
	"fmt"

	"github.com/dptrain/dptrain/train/rundir"
)

// ErrLocked is returned by RunCell for a cell that another process is running (it holds the
// cell's lock): the cell is running elsewhere, not failed.
var ErrLocked = errors.New("running elsewhere")

// LockFile, in a cell's directory, is held (flock) by the process running the cell.
const LockFile = "lock"

// lockCell takes cell i's lock without waiting (rundir.LockDir on the cell's LockFile): two
// processes never train the same cell (for example a requeued Slurm task beside a local run).
// The lock goes with the process, also when it is killed.
func lockCell(p *Plan, i int) (release func(), err error) {
	release, err = rundir.LockDir(p.CellDir(i), LockFile, fmt.Sprintf("cell %d (%s)", i, p.Cells[i].ID))
	if errors.Is(err, rundir.ErrLocked) {
		return nil, fmt.Errorf("cell %d (%s) is %w: %v", i, p.Cells[i].ID, ErrLocked, err)
	}
	return release, err
}
