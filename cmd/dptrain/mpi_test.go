//go:build integration

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dptrain/dptrain/internal/mpi"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/train/rundir"
)

// mpiConfig is a seeded data-parallel run on the synthetic mixture.
const mpiConfig = `name: mpi
seed: 3
data: {dataset: synthetic-mixture, normalize: none}
model: {kind: mlp, hidden: [32], activation: tanh}
optimizer: {algorithm: dp-sgd, update: sgd, learning_rate: 0.5, batch_size: 240, clip_norm: 1, noise_multiplier: 1.0}
privacy: {delta: 1.0e-5, accountants: [rdp, pld]}
training: {steps: 40, checkpoint_every: 10}
output: {dir: unused}
`

// requireMPI skips unless this test binary can join an MPI job and OpenMPI's mpirun is
// installed (make test installs openmpi-bin and libopenmpi-dev as root and builds with them).
func requireMPI(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the OpenMPI tests")
	}
	if !mpi.Built {
		t.Skip("this test binary was built without MPI: install openmpi-bin and libopenmpi-dev (make test does, as root) and test with -tags mpi, as make test does when they are installed")
	}
	p, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun is not installed: apt-get install openmpi-bin libopenmpi-dev (make test does, as root)")
	}
	return p
}

// mpirun runs this test binary as dptrain on np ranks on 127.0.0.1, over TCP.
func mpirun(t *testing.T, path string, np int, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	a := []string{"--oversubscribe", "-np", strconv.Itoa(np), "--mca", "btl", "tcp,self",
		"--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo", exe}
	cmd := exec.Command(path, append(a, args...)...)
	cmd.Env = append(os.Environ(), asMainEnv+"=1", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
	return cmd
}

type mpiSummary struct {
	Steps       int     `json:"steps"`
	LedgerSteps int     `json:"ledger_steps"`
	Accuracy    float64 `json:"test_accuracy"`
	Epsilon     []struct {
		Mode    string  `json:"mode"`
		Epsilon float64 `json:"epsilon"`
	} `json:"epsilon"`
}

func readMPISummary(t *testing.T, run string) mpiSummary {
	t.Helper()
	return readMPISummaryFile(t, filepath.Join(run, "summary.json"))
}

func readMPISummaryFile(t *testing.T, path string) mpiSummary {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s mpiSummary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// A seeded 2-rank job under mpirun (TCP on 127.0.0.1) trains the single process's model up to
// float32 rounding, with the same ε, and only rank 0 writes.
func TestMPITwoRanksMatchOneProcess(t *testing.T) {
	path := requireMPI(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "mpi.yaml")
	if err := os.WriteFile(cfg, []byte(mpiConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	one, two := filepath.Join(dir, "one"), filepath.Join(dir, "two")
	if _, _, err := runDptrain(t, "train", "--config", cfg, "--set", "output.dir="+one, "--no-progress"); err != nil {
		t.Fatal(err)
	}
	cmd := mpirun(t, path, 2, "train", "--config", cfg, "--set", "output.dir="+two, "--no-progress")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mpirun -np 2: %v\n%s", err, b)
	} else if n := strings.Count(string(b), "test accuracy"); n != 1 {
		t.Errorf("the job printed %d summaries, want rank 0's alone:\n%s", n, b)
	}
	s1, s2 := readMPISummary(t, one), readMPISummary(t, two)
	if s1.Steps != s2.Steps || math.Abs(s1.Accuracy-s2.Accuracy) > 0.01 {
		t.Errorf("one process: %d steps, accuracy %v; 2 ranks: %d steps, %v", s1.Steps, s1.Accuracy, s2.Steps, s2.Accuracy)
	}
	for i := range s1.Epsilon {
		if s1.Epsilon[i] != s2.Epsilon[i] {
			t.Errorf("ε: one process %+v, 2 ranks %+v", s1.Epsilon[i], s2.Epsilon[i])
		}
	}
	m1, err := models.Load(filepath.Join(one, "model.dpm"))
	if err != nil {
		t.Fatal(err)
	}
	m2, err := models.Load(filepath.Join(two, "model.dpm"))
	if err != nil {
		t.Fatal(err)
	}
	var worst float64
	for i, v := range m1.Params() {
		worst = max(worst, math.Abs(float64(v-m2.Params()[i]))/(1+math.Abs(float64(v))))
	}
	t.Logf("largest relative parameter difference, 2 ranks against one process, after %d steps: %.3g", s1.Steps, worst)
	if worst > 1e-4 {
		t.Errorf("the 2-rank model differs from the single process's by %v", worst)
	}
}

// Killing one rank fails the whole job: mpirun stops the other rank, which leaves a line
// saying how to continue (rank 0, or rank 1 when rank 0 is the one killed); the run then
// resumes from rank 0's last checkpoint on 2 ranks and reaches its planned end, with every
// step ever run counted.
func TestMPIKilledRankFailsTheJobAndTheRunResumes(t *testing.T) {
	path := requireMPI(t)
	for _, test := range []struct {
		killed int
		want   string // the survivor's line
	}{
		{killed: 1, want: "dptrain: terminated: the job is stopping"},
		{killed: 0, want: "dptrain: rank 1: terminated, and rank 0 has not stopped the run"},
	} {
		t.Run(fmt.Sprintf("rank %d", test.killed), func(t *testing.T) {
			run := filepath.Join(t.TempDir(), "run")
			cmd, out := startJob(t, path, run, "--set", "training.steps=3000")
			if err := syscall.Kill(rankPID(t, run, test.killed), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			if err := endOfJob(t, cmd, out, fmt.Sprintf("rank %d's death", test.killed)); err == nil {
				t.Fatalf("the job succeeded although rank %d was killed:\n%s", test.killed, out.String())
			}
			resume := resumeLine(cmd, filepath.Join(run, "config.yaml"))
			if got := out.String(); !strings.Contains(got, fmt.Sprintf("rank %d", test.killed)) ||
				!strings.Contains(got, test.want) || !strings.Contains(got, "Continue with:\n  "+resume) {
				t.Errorf("the job's output does not name the failed rank, or lacks %q and the command to continue (%s):\n%s", test.want, resume, got)
			}
			cmd = mpirun(t, path, 2, "train", "--config", filepath.Join(run, "config.yaml"), "--resume", "--no-progress")
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("resume on 2 ranks: %v\n%s", err, b)
			}
			s := readMPISummary(t, run)
			if s.Steps != 3000 || s.LedgerSteps < 3000 {
				t.Errorf("resumed run: %d steps, %d in the ledger; want 3000 and at least as many", s.Steps, s.LedgerSteps)
			}
		})
	}
}

// Ctrl-C to mpirun (which sends SIGTERM to every rank and kills them 1 s later) stops a 2-rank
// run as it stops one process: rank 0 saves a checkpoint and prints the command that continues
// the run, mpirun's own command line with the program. OpenMPI 4's mpirun exits 1 whatever
// its ranks' status, after a signal of its own.
func TestMPICtrlCPrintsTheCommandToContinue(t *testing.T) {
	path := requireMPI(t)
	run := filepath.Join(t.TempDir(), "run")
	cmd, out := startJob(t, path, run, "--set", "training.steps=1000000")
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := endOfJob(t, cmd, out, "Ctrl-C")
	t.Logf("mpirun's exit status after Ctrl-C: %v", err)
	if err == nil {
		t.Errorf("mpirun succeeded after Ctrl-C:\n%s", out.String())
	}
	resume := resumeLine(cmd, filepath.Join(run, "config.yaml"))
	got := out.String()
	if !strings.Contains(got, "interrupted after step") || !strings.Contains(got, "a checkpoint was saved in") {
		t.Errorf("rank 0 did not report the checkpoint it saved:\n%s", got)
	}
	if n := strings.Count(got, "Continue with:\n  "+resume+"\n"); n != 2 {
		t.Errorf("the command to continue, %s, is printed %d times, want twice (when the job starts stopping, and once the checkpoint is saved):\n%s", resume, n, got)
	}
	ck, err := rundir.LoadCheckpoint(rundir.PrivatePath(run, rundir.CheckpointFile))
	if err != nil {
		t.Fatalf("the checkpoint saved at Ctrl-C: %v", err)
	}
	if s := readMPISummaryFile(t, rundir.PrivatePath(run, rundir.InterruptedSummaryFile)); s.Steps != ck.Header.Step {
		t.Errorf("the interrupted summary is at step %d, the checkpoint at %d", s.Steps, ck.Header.Step)
	}
}

// startJob starts a 2-rank run of mpiConfig in run, with sets, and returns once it has saved
// its first checkpoint, with its output so far.
func startJob(t *testing.T, path, run string, sets ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cfg := filepath.Join(filepath.Dir(run), "mpi.yaml")
	if err := os.WriteFile(cfg, []byte(mpiConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"train", "--config", cfg, "--set", "output.dir=" + run, "--set", "training.checkpoint_every=50", "--no-progress"}, sets...)
	cmd := mpirun(t, path, 2, args...)
	out := new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the run's first checkpoint", func() bool {
		_, err := os.Stat(filepath.Join(run, "private", "checkpoint.dpt"))
		return err == nil
	})
	return cmd, out
}

// endOfJob waits for the job cmd to end after what (at most 60 s) and returns its error.
func endOfJob(t *testing.T, cmd *exec.Cmd, out *bytes.Buffer, what string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the job did not end within 60 s of %s:\n%s", what, out.String())
		return nil
	}
}

// resumeLine is the command that continues the run of config that cmd (an mpirun) started.
func resumeLine(cmd *exec.Cmd, config string) string {
	exe := cmd.Args[slices.Index(cmd.Args, "train")-1]
	return strings.Join(cmd.Args[:slices.Index(cmd.Args, exe)+1], " ") + " train --config " + config + " --resume"
}

// rankPID returns the PID of the rank of the job writing run (its command line names run).
func rankPID(t *testing.T, run string, rank int) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*")
	want := "OMPI_COMM_WORLD_RANK=" + strconv.Itoa(rank)
	for _, p := range procs {
		cl, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !strings.Contains(string(cl), "output.dir="+run) || strings.Contains(string(cl), "mpirun") {
			continue
		}
		env, err := os.ReadFile(filepath.Join(p, "environ"))
		if err != nil {
			continue
		}
		for _, kv := range strings.Split(string(env), "\x00") {
			if kv == want {
				pid, _ := strconv.Atoi(filepath.Base(p))
				return pid
			}
		}
	}
	t.Fatalf("no process of rank %d found", rank)
	return 0
}

// A sweep cell with --ntasks 2 runs as one 2-rank job under the single-node Slurm cluster on
// 127.0.0.1: sbatch allocates two tasks, mpirun starts a rank on each, and rank 0 writes the
// cell's summary.
func TestSlurmDataParallelCell(t *testing.T) {
	requireMPI(t)
	requireSlurm(t)
	dir := t.TempDir()
	conf := startSlurm(t, filepath.Join(dir, "cluster"))
	plan := planSuite(t, slurmTinySuite)
	exe, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := runDptrain(t, "sweep", "emit", "--slurm", plan, "--executable", exe, "--cpus-per-task", "1", "--ntasks", "2", "--concurrent", "1"); err != nil {
		t.Fatal(err)
	}
	array, err := os.ReadFile(filepath.Join(plan, "slurm", "array.sbatch"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#SBATCH --ntasks=2", "exec mpirun --bind-to none "} {
		if !strings.Contains(string(array), want) {
			t.Errorf("array.sbatch lacks %q:\n%s", want, array)
		}
	}
	cmd := exec.Command("bash", filepath.Join(plan, "slurm", "submit.sh"), "--wait")
	cmd.Env = append(os.Environ(), "SLURM_CONF="+conf, asMainEnv+"=1", "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
		"OMPI_MCA_btl=tcp,self", "OMPI_MCA_btl_tcp_if_include=lo", "OMPI_MCA_oob_tcp_if_include=lo")
	if b, err := cmd.CombinedOutput(); err != nil {
		logs, _ := filepath.Glob(filepath.Join(plan, "slurm", "*.out"))
		for _, l := range logs {
			lb, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", l, lb)
		}
		t.Fatalf("submit.sh --wait: %v\n%s", err, b)
	}
	cells, _ := filepath.Glob(filepath.Join(plan, "cells", "*", "run", "summary.json"))
	if len(cells) != 4 {
		t.Fatalf("%d cells finished, want 4", len(cells))
	}
	for _, c := range cells {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Ranks int `json:"ranks"`
		}
		if err := json.Unmarshal(b, &s); err != nil || s.Ranks != 2 {
			t.Errorf("%s: ranks %d (%v), want 2", c, s.Ranks, err)
		}
	}
}
