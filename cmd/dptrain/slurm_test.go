//go:build integration

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/sweep"
	"github.com/dptrain/dptrain/cmd/dptrain/internal/tune"
	"github.com/dptrain/dptrain/train/rundir"
)

// TestSlurmJobArray starts a single-node Slurm cluster on 127.0.0.1 (munged, slurmctld, slurmd
// with a temporary SLURM_CONF and state directories), submits a 4-cell suite as the job array
// that `dptrain sweep emit --slurm` writes, waits for its collector with sbatch --wait, checks
// the collected table, and stops the daemons by PID.
func TestSlurmJobArray(t *testing.T) {
	dir, conf := slurmCluster(t)

	for name, text := range map[string]string{"base.yaml": slurmTinyConfig, "suite.yaml": slurmTinySuite} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	plan := filepath.Join(dir, "plan")
	exe, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := runDptrain(t, "sweep", "plan", filepath.Join(dir, "suite.yaml"), "--out", plan); err != nil {
		t.Fatal(err)
	}
	out, _, err := runDptrain(t, "sweep", "emit", "--slurm", plan, "--executable", exe, "--cpus-per-task", "1", "--concurrent", "2")
	if err != nil {
		t.Fatal(err)
	}
	array, err := os.ReadFile(filepath.Join(plan, "slurm", "array.sbatch"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#SBATCH --array=0,1,2,3%2", "#SBATCH --requeue", "#SBATCH --cpus-per-task=1", "OPENBLAS_NUM_THREADS", `--index "$SLURM_ARRAY_TASK_ID"`} {
		if !strings.Contains(string(array), want) {
			t.Errorf("array.sbatch lacks %q:\n%s", want, array)
		}
	}
	submit := strings.TrimSpace(out[strings.LastIndex(out, "bash ")+5:])
	cmd := exec.Command("bash", submit, "--wait")
	cmd.Env = append(os.Environ(), "SLURM_CONF="+conf, asMainEnv+"=1")
	began := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		logs, _ := filepath.Glob(filepath.Join(plan, "slurm", "*.out"))
		for _, l := range logs {
			lb, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", l, lb)
		}
		t.Fatalf("submit.sh --wait: %v\n%s", err, b)
	}
	t.Logf("job array and collector finished in %.1f s", time.Since(began).Seconds())
	md, err := os.ReadFile(filepath.Join(plan, "results.md"))
	if err != nil {
		t.Fatalf("the collector job wrote no results.md: %v", err)
	}
	for _, want := range []string{"| dp-sgd | 2/2 |", "| dp-sgd-plain | 2/2 |", "(certified)", "Privacy: Each cell's ε covers that run alone"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("results.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(string(md), "did not finish") {
		t.Errorf("some cells did not finish:\n%s", md)
	}
}

// TestSlurmTune runs a private search's candidates as a Slurm job array on a single-node
// cluster: dptrain tune --slurm draws the search and writes the array without training; before
// the array has run, dptrain tune refuses to train the candidates here; after submit.sh --wait,
// dptrain tune scores the candidates the array trained (none is trained again), releases the
// best and prints the same search, ε and release as the same seeded search run locally.
func TestSlurmTune(t *testing.T) {
	dir, conf := slurmCluster(t)
	base, space := writeTuneSearch(t, dir, slurmTinyConfig)
	exe, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	onSlurm := filepath.Join(dir, "slurm")
	args := func(out string) []string { return []string{"tune", "--config", base, "--space", space, "--out", out} }

	out, _, err := runDptrain(t, append(args(onSlurm), "--slurm", "--executable", exe, "--cpus-per-task", "1", "--concurrent", "2")...)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^submit with: bash (\S+)$`).FindStringSubmatch(out)
	if m == nil || strings.Contains(out, "search: ε") || !strings.Contains(out, strings.Join(args(onSlurm), " ")) {
		t.Fatalf("tune --slurm printed:\n%s\nwant the submit command and the command that scores, and no search", out)
	}
	drawn := readTuneState(t, onSlurm)
	p, err := sweep.LoadPlan(filepath.Join(onSlurm, tune.PrivateDir, tune.SweepDir))
	if err != nil {
		t.Fatal(err)
	}
	if drawn.K != 4 || len(p.Cells) != 4 {
		t.Fatalf("K = %d, %d cells: seed 7 draws K = 4", drawn.K, len(p.Cells))
	}
	array, err := os.ReadFile(filepath.Join(p.Dir(), sweep.SlurmDir, sweep.SlurmArray))
	if err != nil || !strings.Contains(string(array), "#SBATCH --array=0,1,2,3%2") {
		t.Fatalf("array.sbatch (%v):\n%s", err, array)
	}
	// Before the array has run, the search trains nothing here and says what to do.
	if _, _, err := runDptrain(t, args(onSlurm)...); err == nil || !strings.Contains(err.Error(), "4 candidates have not finished") || !strings.Contains(err.Error(), "trains none of them here") {
		t.Errorf("dptrain tune before the array ran: %v; want a refusal that trains nothing", err)
	}
	for i := range p.Cells {
		if p.Done(i) {
			t.Fatalf("candidate %d trained before the array was submitted", i)
		}
	}

	cmd := exec.Command("bash", m[1], "--wait")
	cmd.Env = append(os.Environ(), "SLURM_CONF="+conf, asMainEnv+"=1")
	began := time.Now()
	if b, err := cmd.CombinedOutput(); err != nil {
		logs, _ := filepath.Glob(filepath.Join(p.Dir(), sweep.SlurmDir, "*.out"))
		for _, l := range logs {
			lb, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", l, lb)
		}
		t.Fatalf("submit.sh --wait: %v\n%s", err, b)
	}
	t.Logf("the candidates' job array and its collector finished in %.1f s", time.Since(began).Seconds())
	trained := make([]time.Time, len(p.Cells))
	for i := range p.Cells {
		// The array task's output, and no worker log of a local run.
		if b, err := os.ReadFile(filepath.Join(p.Dir(), sweep.SlurmDir, fmt.Sprintf("cell-%d.out", i))); err != nil || !strings.Contains(string(b), p.RunDir(i)) {
			t.Errorf("candidate %d: no array task output naming its run (%v):\n%s", i, err, b)
		}
		if _, err := os.Stat(filepath.Join(p.CellDir(i), sweep.LogFile)); err == nil {
			t.Errorf("candidate %d has a local worker's %s", i, sweep.LogFile)
		}
		fi, err := os.Stat(filepath.Join(p.RunDir(i), rundir.ModelFile))
		if err != nil {
			t.Fatalf("candidate %d did not finish on the cluster: %v", i, err)
		}
		trained[i] = fi.ModTime()
	}

	scored, errOut, err := runDptrain(t, args(onSlurm)...)
	if err != nil {
		t.Fatalf("dptrain tune after the array: %v\n%s", err, errOut)
	}
	t.Logf("dptrain tune after the array:\n%s", scored)
	for i := range p.Cells {
		if fi, err := os.Stat(filepath.Join(p.RunDir(i), rundir.ModelFile)); err != nil || !fi.ModTime().Equal(trained[i]) {
			t.Errorf("candidate %d was trained again by the scoring call (%v)", i, err)
		}
		if _, err := os.Stat(filepath.Join(p.CellDir(i), sweep.LogFile)); err == nil {
			t.Errorf("the scoring call ran candidate %d here (it has a local worker's %s)", i, sweep.LogFile)
		}
	}
	after := readTuneState(t, onSlurm)
	checkScoredAsDrawn(t, drawn, after)

	// The same seeded search run here: the same K, candidates, scores, ε and release.
	t.Setenv(asMainEnv, "1") // the local workers are this test binary acting as dptrain
	here := filepath.Join(dir, "local")
	local, _, err := runDptrain(t, append(args(here), "--workers", "2")...)
	if err != nil {
		t.Fatal(err)
	}
	if withoutPublish(scored) != withoutPublish(local) || !strings.Contains(scored, "search: ε = ") || !strings.Contains(scored, "released: ") {
		t.Errorf("on Slurm:\n%s\nhere:\n%s\nwant the same search, ε and release", scored, local)
	}
	if l := readTuneState(t, here); !reflect.DeepEqual(l.Candidates, after.Candidates) {
		t.Errorf("one seed, two searches:\non Slurm %+v\nhere     %+v", after.Candidates, l.Candidates)
	}
}

// withoutPublish is dptrain tune's output without its "publish DIR/..." line, which names the
// search directory.
func withoutPublish(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "publish ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// slurmCluster skips under -short or without Slurm, and otherwise starts a single-node cluster
// in a temporary directory (its cluster/ folder) for the test: it returns the directory and the
// cluster's SLURM_CONF.
func slurmCluster(t *testing.T) (dir, conf string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the Slurm cluster test")
	}
	requireSlurm(t)
	dir = t.TempDir()
	return dir, startSlurm(t, filepath.Join(dir, "cluster"))
}

// requireSlurm skips unless slurmctld, slurmd, sbatch and munged are installed, saying how to
// install them: the tests install nothing (make test installs them before go test).
func requireSlurm(t *testing.T) {
	t.Helper()
	for _, b := range []string{"munged", "slurmctld", "slurmd", "sbatch", "sinfo"} {
		if _, err := exec.LookPath(b); err != nil {
			if _, err := os.Stat("/usr/sbin/" + b); err != nil {
				t.Skipf("Slurm is not installed (%s not found): as root, apt-get install slurm-wlm munge, or make test, which installs them", b)
			}
		}
	}
}

func sbin(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	return "/usr/sbin/" + name
}

// startSlurm starts munged, slurmctld and slurmd in the foreground under dir and returns the
// path of their slurm.conf; the daemons are stopped by PID when the test ends.
func startSlurm(t *testing.T, dir string) string {
	t.Helper()
	for _, d := range []string{"munge-key", "munge", "state", "spool"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(dir, "munge"), 0o755); err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 1024)
	f, err := os.Open("/dev/urandom")
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.Read(key)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "munge-key", "key")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "munge", "sock")
	start(t, dir, "munged", sbin("munged"), "-F", "-f", "--socket="+sock, "--key-file="+keyFile,
		"--log-file="+filepath.Join(dir, "munged.log"), "--pid-file="+filepath.Join(dir, "munged.pid"), "--seed-file="+filepath.Join(dir, "munged.seed"))
	waitFor(t, "munged's socket", func() bool { _, err := os.Stat(sock); return err == nil })

	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "slurm.conf")
	text := fmt.Sprintf(`ClusterName=dptraintest
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=%d
SlurmdPort=%d
AuthType=auth/munge
# cred_expire: how long a requeued job waits before it starts again (default 120 s)
AuthInfo=socket=%s,cred_expire=10
CredType=cred/munge
StateSaveLocation=%s
SlurmdSpoolDir=%s
SlurmctldPidFile=%s
SlurmdPidFile=%s
SlurmctldLogFile=%s
SlurmdLogFile=%s
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
SwitchType=switch/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
NodeName=dptrain NodeAddr=127.0.0.1 NodeHostname=%s CPUs=2 RealMemory=1000 State=UNKNOWN
PartitionName=test Nodes=dptrain Default=YES MaxTime=INFINITE State=UP
`, freePort(t), freePort(t), sock, filepath.Join(dir, "state"), filepath.Join(dir, "spool"),
		filepath.Join(dir, "slurmctld.pid"), filepath.Join(dir, "slurmd.pid"),
		filepath.Join(dir, "slurmctld.log"), filepath.Join(dir, "slurmd.log"), host)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLURM_CONF", conf)
	start(t, dir, "slurmctld", sbin("slurmctld"), "-D", "-i")
	start(t, dir, "slurmd", sbin("slurmd"), "-D", "-N", "dptrain")
	waitFor(t, "the node to be idle", func() bool {
		out, err := exec.Command("sinfo", "-h", "-o", "%t").Output()
		return err == nil && strings.TrimSpace(string(out)) == "idle"
	})
	// Before the daemons stop (cleanups run last first), cancel every job left, so that no
	// job step (slurmstepd and the task under it) outlives the test.
	t.Cleanup(func() {
		exec.Command("scancel", "--full", "--partition", "test").Run()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if out, err := exec.Command("squeue", "-h").Output(); err != nil || len(bytes.TrimSpace(out)) == 0 {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Logf("jobs still queued after scancel: the daemons stop now")
	})
	return conf
}

// start runs a daemon in the foreground, its output in dir/NAME.out, and stops it by PID
// (SIGTERM, then SIGKILL after 10 s) when the test ends.
func start(t *testing.T, dir, name, path string, args ...string) {
	t.Helper()
	out, err := os.Create(filepath.Join(dir, name+".out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(path, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); out.Close(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(out.Name())
			t.Logf("%s (pid %d) output:\n%s", name, cmd.Process.Pid, bytes.TrimSpace(b))
		}
	})
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after 30 s waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestSlurmRequeueResumesCell requeues a running cell of a job array with scontrol: Slurm sends
// the task SIGTERM, run-cell checkpoints and exits, and the requeued task resumes the cell from
// its checkpoint (its ledger continues) rather than starting again.
func TestSlurmRequeueResumesCell(t *testing.T) {
	_, conf := slurmCluster(t)
	plan := planSuite(t, longSuite)
	exe, err := filepath.Abs(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := runDptrain(t, "sweep", "emit", "--slurm", plan, "--executable", exe, "--cpus-per-task", "1"); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "SLURM_CONF="+conf, asMainEnv+"=1")
	sbatch := exec.Command("sbatch", "--parsable", filepath.Join(plan, "slurm", "array.sbatch"))
	sbatch.Env = env
	out, err := sbatch.Output()
	if err != nil {
		t.Fatalf("sbatch: %v", err)
	}
	job := strings.TrimSpace(strings.Split(string(out), ";")[0])
	run := filepath.Join(plan, "cells", "000-dp-sgd", "run")
	waitFor(t, "the cell's first checkpoint", func() bool {
		_, err := os.Stat(filepath.Join(run, "private", "checkpoint.dpt"))
		return err == nil
	})
	requeue := exec.Command("scontrol", "requeue", job+"_0")
	requeue.Env = env
	if b, err := requeue.CombinedOutput(); err != nil {
		t.Fatalf("scontrol requeue: %v\n%s", err, b)
	}
	began := time.Now()
	deadline := began.Add(5 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(run, "summary.json")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(filepath.Join(plan, "slurm", "cell-0.out"))
			t.Fatalf("the requeued cell did not finish within 5 minutes:\n%s", b)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("requeued cell finished %.1f s after the requeue", time.Since(began).Seconds())
	log, _ := os.ReadFile(filepath.Join(plan, "slurm", "cell-0.out"))
	if !strings.Contains(string(log), "interrupted at step") {
		t.Errorf("the task's output does not show the cell checkpointing on Slurm's SIGTERM:\n%s", log)
	}
	b, err := os.ReadFile(filepath.Join(run, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Steps          int `json:"steps"`
		LedgerSteps    int `json:"ledger_steps"`
		AbandonedSteps int `json:"abandoned_steps"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Steps != 4000 || sum.LedgerSteps != 4000+sum.AbandonedSteps {
		t.Errorf("requeued cell: %+v; want 4000 steps and the ledger continued", sum)
	}
}
