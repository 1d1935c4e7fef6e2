package sweep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/rundir"
)

// Worker builds the command that runs one cell in its own process (for dptrain:
// `dptrain sweep run-cell DIR --index I`). Each cell runs in a process of its own so that a
// crash or kill loses only that cell's progress since its last checkpoint, and so that its
// threads can be set per process. The context it is given is not cancelled when the runner is
// interrupted: the runner stops the process itself (SIGTERM, so that it checkpoints).
type Worker func(ctx context.Context, index int) *exec.Cmd

// ExitLocked is the exit status of a worker whose cell another process runs (ErrLocked):
// `dptrain sweep run-cell` exits with it, and the runner reports the cell as running
// elsewhere, not failed.
const ExitLocked = 75

// Outcomes of a cell in a local run (CellEvent.Outcome).
const (
	OutcomeFinished    = "finished"
	OutcomeFailed      = "failed"
	OutcomeInterrupted = "interrupted"
	OutcomeElsewhere   = "running elsewhere"
)

// CellEvent is the end of one cell in a local run.
type CellEvent struct {
	Index int
	ID    string
	// Outcome is one of the Outcome constants.
	Outcome string
	// Summary is the finished cell's summary.json (Outcome finished), or the summary an
	// interrupted cell wrote in its private/ as it stopped (Outcome interrupted; nil if none).
	Summary *train.Summary
	// Err is the failure (Outcome failed), with the cell's log file.
	Err string
	// CheckpointStep is the step of an interrupted cell's checkpoint (0: none; it starts
	// again).
	CheckpointStep int
	// Elapsed is the cell's wall time in this run, process start to exit.
	Elapsed time.Duration
	// Done counts the cells of this run that have ended, this one included, out of Total.
	Done, Total int
	// ETA estimates the time until the run's last cell ends from the finished cells' pace
	// (0: no estimate yet, or nothing left).
	ETA time.Duration
}

// LocalReport counts what RunLocal did.
type LocalReport struct {
	Skipped, Ran, Failed, Unavailable int
	// Interrupted lists the cells stopped by the interruption (they checkpoint and resume on
	// the next run); Elsewhere the cells that another process was running.
	Interrupted, Elsewhere []int
	// Errors maps a failed cell's index to its error.
	Errors map[int]string
}

// Threads is GOMAXPROCS for each of workers concurrent cells on this machine: the CPUs divided
// among them, at least one.
func Threads(workers int) int {
	t := runtime.NumCPU() / max(workers, 1)
	return max(t, 1)
}

// BLASThreads is OPENBLAS_NUM_THREADS for a cell when the operator has not set it: one thread,
// as dptrain itself chooses (models/blas_threads_openblas.go). The conv path splits the batch
// across goroutines (GOMAXPROCS); more OpenBLAS threads spin between GEMMs on the cores those
// goroutines need. With NumCPU/workers BLAS threads, the fmnist-cnn-dpsgd cell (batch 256) under
// `sweep run --workers 1` was reported at 98–114 ms a step against 30–33 ms for `dptrain train`
// alone. Measured here on 2 cores (60 steps, batch 256, 4 interleaved rounds each): at load
// 0.9–1.7, with 2 BLAS threads the cell took 56–67 ms a step against 33–37 ms for train alone;
// with one BLAS thread and GOMAXPROCS=2, 22.6–25.5 ms against 22.6–23.7 ms. At load 7–10:
// 204–268 against 87–144 ms, then 49–103 against 52–160 ms.
const BLASThreads = 1

// DefaultGrace is how long an interrupted cell has, after SIGTERM, to save its checkpoint and
// exit before it is killed.
const DefaultGrace = 2 * time.Minute

// Local runs the cells of a plan on this machine with a pool of worker processes.
type Local struct {
	// Workers is how many cells run at once (at least 1).
	Workers int
	// Worker builds a cell's process.
	Worker Worker
	// OnCell, when set, is called as each cell ends, one call at a time.
	OnCell func(CellEvent)
	// Grace is how long an interrupted cell has to checkpoint after SIGTERM before it is
	// killed (0: DefaultGrace).
	Grace time.Duration
}

// RunLocal runs the plan with workers processes at a time; see Local.Run.
func RunLocal(ctx context.Context, p *Plan, workers int, work Worker) (LocalReport, error) {
	return Local{Workers: workers, Worker: work}.Run(ctx, p)
}

// Run runs every unfinished, available cell of the plan with at most l.Workers processes at a
// time. Each process gets GOMAXPROCS = Threads(l.Workers), OPENBLAS_NUM_THREADS = BLASThreads
// unless the environment sets it, and its output in the cell's log.txt. Finished cells are
// skipped, so Run can be run again after an interruption: interrupted cells resume from their
// checkpoints.
//
// Cancelling ctx starts no more cells and sends SIGTERM to the running ones, which checkpoint
// and stop (killed after l.Grace); Run then returns ctx's error with the interrupted cells in
// the report. A cell whose worker exits with ExitLocked is running elsewhere, not failed.
func (l Local) Run(ctx context.Context, p *Plan) (LocalReport, error) {
	if l.Workers < 1 {
		return LocalReport{}, fmt.Errorf("--workers %d: want at least 1", l.Workers)
	}
	if l.Grace <= 0 {
		l.Grace = DefaultGrace
	}
	rep := LocalReport{Errors: map[int]string{}}
	env := []string{"GOMAXPROCS=" + strconv.Itoa(Threads(l.Workers))}
	if os.Getenv("OPENBLAS_NUM_THREADS") == "" {
		env = append(env, "OPENBLAS_NUM_THREADS="+strconv.Itoa(BLASThreads))
	}
	var todo []int
	for i, c := range p.Cells {
		switch {
		case c.Unavailable != "":
			rep.Unavailable++
		case p.Done(i):
			rep.Skipped++
		default:
			todo = append(todo, i)
		}
	}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		sem      = make(chan struct{}, l.Workers)
		began    = time.Now()
		ended    int
		finished int
	)
	end := func(ev CellEvent) {
		mu.Lock()
		defer mu.Unlock()
		ended++
		switch ev.Outcome {
		case OutcomeFinished:
			rep.Ran++
			finished++
		case OutcomeFailed:
			rep.Failed++
			rep.Errors[ev.Index] = ev.Err
			finished++ // a failed cell also took its share of the time
		case OutcomeInterrupted:
			rep.Interrupted = append(rep.Interrupted, ev.Index)
		case OutcomeElsewhere:
			rep.Elsewhere = append(rep.Elsewhere, ev.Index)
		}
		ev.Done, ev.Total = ended, len(todo)
		if left := len(todo) - ended; left > 0 && finished > 0 && ctx.Err() == nil {
			// The pool ends cells at the pace it has so far (workers included).
			ev.ETA = time.Since(began) / time.Duration(finished) * time.Duration(left)
		}
		if l.OnCell != nil {
			l.OnCell(ev)
		}
	}
launch:
	for _, i := range todo {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break launch
		}
		if ctx.Err() != nil {
			<-sem
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			end(l.runProcess(ctx, p, i, env))
		}(i)
	}
	wg.Wait()
	return rep, ctx.Err()
}

// runProcess runs cell i's worker to its end and says how it ended.
func (l Local) runProcess(ctx context.Context, p *Plan, i int, env []string) CellEvent {
	ev := CellEvent{Index: i, ID: p.Cells[i].ID, Outcome: OutcomeFailed}
	fail := func(err error) CellEvent {
		ev.Err = fmt.Sprintf("cell %d (%s): %v", i, ev.ID, err)
		return ev
	}
	if err := os.MkdirAll(p.CellDir(i), 0o755); err != nil {
		return fail(err)
	}
	logPath := filepath.Join(p.CellDir(i), LogFile)
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fail(err)
	}
	defer log.Close()
	cmd := l.Worker(context.WithoutCancel(ctx), i)
	cmd.Stdout, cmd.Stderr = log, log
	isolate(cmd)
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, env...)
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return fail(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err = <-exited:
	case <-ctx.Done():
		// As Slurm does before a requeue: SIGTERM, which the cell turns into a checkpoint.
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err = <-exited:
		case <-time.After(l.Grace):
			cmd.Process.Kill()
			err = <-exited
		}
	}
	ev.Elapsed = time.Since(began)
	var ee *exec.ExitError
	switch {
	case err == nil && p.Done(i):
		ev.Outcome = OutcomeFinished
		if ev.Summary, err = readSummary(filepath.Join(p.RunDir(i), rundir.SummaryFile)); err != nil {
			return fail(err)
		}
	case errors.As(err, &ee) && ee.ExitCode() == ExitLocked:
		ev.Outcome = OutcomeElsewhere
	case ctx.Err() != nil:
		ev.Outcome = OutcomeInterrupted
		if c, cerr := rundir.LoadCheckpoint(rundir.PrivatePath(p.RunDir(i), rundir.CheckpointFile)); cerr == nil {
			ev.CheckpointStep = c.Header.Step
			// The summary the cell wrote as it stopped, when it is of that checkpoint.
			if s, serr := readSummary(rundir.PrivatePath(p.RunDir(i), rundir.InterruptedSummaryFile)); serr == nil && s.Steps == c.Header.Step {
				ev.Summary = s
			}
		}
	case err == nil:
		return fail(fmt.Errorf("the worker exited without finishing the cell (see %s)", logPath))
	default:
		return fail(fmt.Errorf("%v (see %s)", err, logPath))
	}
	return ev
}
