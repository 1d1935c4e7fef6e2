package sweep

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dptrain/dptrain/train/rundir"
)

// A cell's CPUs go to Go (GOMAXPROCS), and OpenBLAS stays on one thread: with NumCPU/workers
// OpenBLAS threads the CNN step was 3–4 times slower than dptrain train alone.
func TestRunLocalGivesCPUsThroughGOMAXPROCS(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: GOMAXPROCS and one BLAS thread cannot be told apart")
	}
	t.Setenv("OPENBLAS_NUM_THREADS", "")
	p := planTiny(t)
	if _, err := RunLocal(context.Background(), p, 1, testWorker(p)); err != nil {
		t.Fatal(err)
	}
	log, err := os.ReadFile(filepath.Join(p.CellDir(0), LogFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"OPENBLAS_NUM_THREADS=1\n", "GOMAXPROCS=" + strconv.Itoa(runtime.NumCPU()) + "\n"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("the only worker on %d CPUs: its log %q lacks %q", runtime.NumCPU(), log, want)
		}
	}

	// An operator's own OPENBLAS_NUM_THREADS is kept.
	t.Setenv("OPENBLAS_NUM_THREADS", "3")
	p = planTiny(t)
	if _, err := RunLocal(context.Background(), p, 1, testWorker(p)); err != nil {
		t.Fatal(err)
	}
	if log, _ := os.ReadFile(filepath.Join(p.CellDir(0), LogFile)); !strings.Contains(string(log), "OPENBLAS_NUM_THREADS=3\n") {
		t.Errorf("OPENBLAS_NUM_THREADS=3 in the runner's environment: the worker's log %q does not keep it", log)
	}
}

// The job array gives a task's CPUs to GOMAXPROCS and keeps OpenBLAS on one thread unless the
// submitter sets it: the script's exports are run by bash as a Slurm task would run them.
func TestEmitSlurmKeepsBLASOnOneThread(t *testing.T) {
	p := planTiny(t)
	files, err := EmitSlurm(p, SlurmOptions{Executable: "/usr/bin/dptrain", CPUsPerTask: 4})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	var exports []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "export ") {
			exports = append(exports, l)
		}
	}
	for _, c := range []struct{ env, want string }{
		{"SLURM_CPUS_PER_TASK=4", "1 4"},
		{"SLURM_CPUS_PER_TASK=4 OPENBLAS_NUM_THREADS=2", "2 4"},
	} {
		script := strings.Join(exports, "\n") + "\necho \"$OPENBLAS_NUM_THREADS $GOMAXPROCS\"\n"
		cmd := exec.Command("bash", "-c", script)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, strings.Fields(c.env)...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(out)); got != c.want {
			t.Errorf("%s: OPENBLAS_NUM_THREADS and GOMAXPROCS are %q, want %q; exports:\n%s", c.env, got, c.want, strings.Join(exports, "\n"))
		}
	}
}

// Each cell's end is reported as it happens, with its summary, the cells left and an estimate.
func TestRunLocalReportsEachCell(t *testing.T) {
	p := planTiny(t)
	var evs []CellEvent
	rep, err := Local{Workers: 2, Worker: testWorker(p), OnCell: func(ev CellEvent) { evs = append(evs, ev) }}.Run(context.Background(), p)
	if err != nil || rep.Ran != 4 {
		t.Fatalf("%+v, %v", rep, err)
	}
	if len(evs) != 4 {
		t.Fatalf("%d events, want one per cell (4)", len(evs))
	}
	var seen []int
	for k, ev := range evs {
		seen = append(seen, ev.Index)
		if ev.Outcome != OutcomeFinished || ev.Summary == nil || ev.Summary.TestAccuracy <= 0 || ev.Done != k+1 || ev.Total != 4 || ev.Elapsed <= 0 || ev.ID != p.Cells[ev.Index].ID {
			t.Errorf("event %d: %+v", k, ev)
		}
		if left := ev.Total - ev.Done; (left > 0) != (ev.ETA > 0) {
			t.Errorf("event %d: %d left, ETA %v", k, left, ev.ETA)
		}
	}
	slices.Sort(seen)
	if !slices.Equal(seen, []int{0, 1, 2, 3}) {
		t.Errorf("events for cells %v, want 0 to 3", seen)
	}
}

// A cell that another process holds is running elsewhere, not failed, and its error.txt is not
// written.
func TestRunLocalLockedCellIsRunningElsewhere(t *testing.T) {
	p := planTiny(t)
	release, err := lockCell(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	rep, err := RunLocal(context.Background(), p, 2, testWorker(p))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 0 || rep.Ran != 3 || !slices.Equal(rep.Elsewhere, []int{0}) {
		t.Errorf("report %+v: want cell 0 running elsewhere, 3 ran, none failed", rep)
	}
	if _, err := os.Stat(filepath.Join(p.CellDir(0), ErrorFile)); err == nil {
		t.Errorf("a cell running elsewhere has an %s: Collect would list it as failed", ErrorFile)
	}
}

// Cancelling the run (what Ctrl-C does) sends the running cell SIGTERM: it checkpoints, is
// reported interrupted (not failed), and the next run resumes it with its ledger.
func TestRunLocalInterruptCheckpointsAndResumes(t *testing.T) {
	p := planTiny(t, "privacy.accountants=[rdp]", "training.steps=4000", "training.checkpoint_every=10", "training.eval_every=0")
	ckpt := rundir.PrivatePath(p.RunDir(0), rundir.CheckpointFile)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := os.Stat(ckpt); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	var (
		mu  sync.Mutex
		evs []CellEvent
	)
	rep, err := Local{Workers: 1, Worker: testWorker(p), OnCell: func(ev CellEvent) { mu.Lock(); evs = append(evs, ev); mu.Unlock() }}.Run(ctx, p)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v, want context.Canceled", err)
	}
	if p.Done(0) {
		t.Fatal("cell 0 finished before the interruption: give it more steps")
	}
	if rep.Failed != 0 || !slices.Equal(rep.Interrupted, []int{0}) || len(evs) != 1 {
		t.Fatalf("report %+v, events %+v: want cell 0 interrupted, nothing failed, no other cell started", rep, evs)
	}
	if evs[0].Outcome != OutcomeInterrupted || evs[0].CheckpointStep <= 0 {
		t.Errorf("event %+v: want interrupted with its checkpoint's step", evs[0])
	}
	if _, err := os.Stat(rundir.PrivatePath(p.RunDir(0), rundir.InterruptedSummaryFile)); err != nil {
		t.Errorf("the interrupted cell did not stop as train does on SIGTERM: %v", err)
	}
	if _, err := os.Stat(filepath.Join(p.CellDir(0), ErrorFile)); err == nil {
		t.Errorf("the interrupted cell has an %s: Collect would list it as failed", ErrorFile)
	}
	c, err := rundir.LoadCheckpoint(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if c.Header.Step != evs[0].CheckpointStep {
		t.Errorf("event reports step %d, the checkpoint holds %d", evs[0].CheckpointStep, c.Header.Step)
	}

	rep, err = RunLocal(context.Background(), p, 2, testWorker(p))
	if err != nil || rep.Ran != 4 || rep.Failed != 0 {
		t.Fatalf("second run: %+v, %v; want the interrupted cell resumed and the others run", rep, err)
	}
	sum, err := readSummary(filepath.Join(p.RunDir(0), rundir.SummaryFile))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 4000 || sum.LedgerSteps != 4000+sum.AbandonedSteps {
		t.Errorf("resumed cell: %d steps, ledger of %d with %d abandoned; want 4000 and a ledger that continued", sum.Steps, sum.LedgerSteps, sum.AbandonedSteps)
	}
}
