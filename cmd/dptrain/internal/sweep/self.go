package sweep

import (
	"context"
	"os"
	"os/exec"
	"strconv"
)

// SelfWorker is the Worker of "dptrain sweep run": it runs exe, a dptrain binary, as
// "dptrain --log-level LEVEL sweep run-cell DIR --index I --no-progress", so that every cell
// runs in a process of its own with the runner's log level and no progress bar.
func SelfWorker(exe, logLevel, dir string) Worker {
	return func(ctx context.Context, i int) *exec.Cmd {
		return exec.CommandContext(ctx, exe, "--log-level", logLevel, "sweep", "run-cell", dir, "--index", strconv.Itoa(i), "--no-progress")
	}
}

// CellBLASThreads is the OPENBLAS_NUM_THREADS a cell of Local.Run gets: the environment's, or
// BLASThreads when it sets none.
func CellBLASThreads() string {
	if blas := os.Getenv("OPENBLAS_NUM_THREADS"); blas != "" {
		return blas
	}
	return strconv.Itoa(BLASThreads)
}
