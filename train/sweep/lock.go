package sweep

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// ErrLocked is returned by RunCell for a cell that another process is running (it holds the
// cell's lock): the cell is running elsewhere, not failed.
var ErrLocked = errors.New("running elsewhere")

// LockFile, in a cell's directory, is held (flock) by the process running the cell.
const LockFile = "lock"

// lockCell takes cell i's lock without waiting: two processes never train the same cell (for
// example a requeued Slurm task beside a local run). The lock goes with the process, also when it
// is killed.
func lockCell(p *Plan, i int) (release func(), err error) {
	if err := os.MkdirAll(p.CellDir(i), 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(p.CellDir(i), LockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("cell %d (%s) is %w: another process holds %s (wait for it, or stop it first)", i, p.Cells[i].ID, ErrLocked, path)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
