package sweep

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
)

// Worker builds the command that runs one cell in its own process (for dptrain:
// `dptrain sweep run-cell DIR --index I`). Each cell runs in a process of its own so that a
// crash or kill loses only that cell's progress since its last checkpoint, and so that BLAS
// threads can be set per process.
type Worker func(ctx context.Context, index int) *exec.Cmd

// LocalReport counts what RunLocal did.
type LocalReport struct {
	Skipped, Ran, Failed, Unavailable int
	// Errors maps a failed cell's index to its error.
	Errors map[int]string
}

// Threads is how many BLAS threads each of workers concurrent cells gets on this machine:
// the CPUs divided among them, at least one.
func Threads(workers int) int {
	t := runtime.NumCPU() / max(workers, 1)
	return max(t, 1)
}

// RunLocal runs every unfinished, available cell of the plan with at most workers processes at
// a time. Each process gets OPENBLAS_NUM_THREADS and GOMAXPROCS set to Threads(workers), and its
// output in the cell's log.txt. Finished cells are skipped, so RunLocal can be run again after an
// interruption: interrupted cells resume from their checkpoints.
func RunLocal(ctx context.Context, p *Plan, workers int, work Worker) (LocalReport, error) {
	if workers < 1 {
		return LocalReport{}, fmt.Errorf("--workers %d: want at least 1", workers)
	}
	rep := LocalReport{Errors: map[int]string{}}
	threads := strconv.Itoa(Threads(workers))
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, workers)
	)
	for i, c := range p.Cells {
		switch {
		case c.Unavailable != "":
			rep.Unavailable++
			continue
		case p.Done(i):
			rep.Skipped++
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return rep, ctx.Err()
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			err := runProcess(ctx, p, i, threads, work)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				rep.Failed++
				rep.Errors[i] = err.Error()
				return
			}
			rep.Ran++
		}(i)
	}
	wg.Wait()
	return rep, ctx.Err()
}

func runProcess(ctx context.Context, p *Plan, i int, threads string, work Worker) error {
	if err := os.MkdirAll(p.CellDir(i), 0o755); err != nil {
		return err
	}
	logPath := filepath.Join(p.CellDir(i), LogFile)
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := work(ctx, i)
	cmd.Stdout, cmd.Stderr = log, log
	dieWithParent(cmd)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "OPENBLAS_NUM_THREADS="+threads, "GOMAXPROCS="+threads)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cell %d (%s): %v (see %s)", i, p.Cells[i].ID, err, logPath)
	}
	return nil
}
