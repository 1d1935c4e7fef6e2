package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slurmTiny is a 4-cell suite (2 variants × 2 seeds) on the synthetic mixture.
const (
	slurmTinyConfig = `name: tiny
data: {dataset: synthetic-mixture, normalize: none}
model: {kind: mlp, hidden: [16], activation: tanh}
optimizer: {algorithm: dp-sgd, update: momentum, momentum: 0.9, learning_rate: 0.2, batch_size: 240, clip_norm: 1, noise_multiplier: 1.0}
privacy: {delta: 1.0e-5, accountants: [rdp]}
training: {steps: 20, checkpoint_every: 10}
output: {dir: unused}
`
	slurmTinySuite = `name: slurm-tiny
config: base.yaml
axes:
  - name: algorithm
    values:
      - label: dp-sgd
      - label: dp-sgd-plain
        set: [optimizer.update=sgd, optimizer.learning_rate=1]
seeds: [1, 2]
`
)

// TestSlurmJobArray starts a single-node Slurm cluster on 127.0.0.1 (munged, slurmctld, slurmd
// with a temporary SLURM_CONF and state directories), submits a 4-cell suite as the job array
// that `dptrain sweep emit --slurm` writes, waits for its collector with sbatch --wait, checks
// the collected table, and stops the daemons by PID.
func TestSlurmJobArray(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the Slurm cluster test")
	}
	requireSlurm(t)
	dir := t.TempDir()
	conf := startSlurm(t, filepath.Join(dir, "cluster"))

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
	if testing.Short() {
		t.Skip("-short: skipping the Slurm cluster test")
	}
	requireSlurm(t)
	dir := t.TempDir()
	conf := startSlurm(t, filepath.Join(dir, "cluster"))
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
