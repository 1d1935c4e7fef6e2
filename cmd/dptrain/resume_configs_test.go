//go:build integration

package main

import (
	"errors"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/rundir"
)

// writeCIFARDir writes CIFAR-10 binary batches of n records each (a label byte and 3072
// pixel bytes) under dir/cifar-10-batches-bin, the layout data.dir accepts.
func writeCIFARDir(t *testing.T, dir string, n int) {
	t.Helper()
	sub := filepath.Join(dir, "cifar-10-batches-bin")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, name := range []string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"} {
		b := make([]byte, 0, n*3073)
		for range n {
			b = append(b, byte(rng.IntN(10)))
			for range 3072 {
				b = append(b, byte(rng.IntN(256)))
			}
		}
		if err := os.WriteFile(filepath.Join(sub, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEveryShippedConfigResumesFromItsSavedConfig runs the sequence dptrain itself prints
// after Ctrl-C, for every config in configs/: `train` stopped by SIGTERM after its first
// checkpoint, then `train --config RUN/config.yaml --resume`, which must continue the run.
// Only the data (a small subset; Fashion-MNIST for MNIST's shape, generated files for
// CIFAR-10 and its JPEG copy), the run length and the checkpoint interval are overridden, and the overrides are
// part of the saved config the resume reads.
func TestEveryShippedConfigResumesFromItsSavedConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("trains every shipped config")
	}
	if _, err := (&data.Locator{}).Load(t.Context(), "fashion-mnist"); err != nil {
		t.Skipf("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist, or dptrain data download --dataset fashion-mnist): %v", err)
	}
	paths, err := filepath.Glob("../../configs/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no shipped configs: %v", err)
	}
	// A SIGTERM that reaches the test after a run has ended must not end the test binary.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	defer signal.Stop(sig)
	cifar := t.TempDir()
	writeCIFARDir(t, cifar, 64)
	for _, p := range paths {
		name := strings.TrimSuffix(filepath.Base(p), ".yaml")
		t.Run(name, func(t *testing.T) {
			cfg, err := config.LoadConfig(p, nil)
			if err != nil {
				t.Fatal(err)
			}
			// A short run (the slowest configs take most of a second a step), made longer while
			// a fast config finishes, or stops at its last step, before the signal lands.
			var run string
			var runErr error
			var ck *rundir.Checkpoint
			for steps := 6; ; steps *= 4 {
				var finished bool
				run, runErr, finished = interruptRun(t, p, cfg, cifar, steps)
				if !finished {
					var err error
					if ck, err = rundir.LoadCheckpoint(rundir.PrivatePath(run, rundir.CheckpointFile)); err != nil {
						t.Fatal(err)
					}
					if ck.Header.Step < steps {
						break
					}
				}
				if steps > 1000 {
					t.Fatalf("every run finished before SIGTERM reached it")
				}
			}
			var ee *exitError
			if !errors.As(runErr, &ee) || ee.status != 143 {
				t.Fatalf("after SIGTERM: %v, want exit status 143", runErr)
			}
			saved := filepath.Join(run, "config.yaml")
			if !strings.Contains(runErr.Error(), "dptrain train --config "+saved+" --resume") {
				t.Fatalf("message %q does not give the command to continue", runErr)
			}
			// The command the run printed, as it printed it.
			if _, _, err := runDptrain(t, "train", "--config", saved, "--resume", "--no-progress"); err != nil {
				t.Fatalf("dptrain train --config %s --resume: %v", saved, err)
			}
			if ck2, err := rundir.LoadCheckpoint(rundir.PrivatePath(run, rundir.CheckpointFile)); err != nil || ck2.Header.Step <= ck.Header.Step {
				t.Errorf("the resumed run did not continue past step %d: %v", ck.Header.Step, err)
			}
		})
	}
}

// interruptRun trains config p (read as cfg) for steps steps, sends SIGTERM after the first
// checkpoint and returns the run directory and the run's error, or finished = true when the
// run ended before the signal.
func interruptRun(t *testing.T, p string, cfg *config.Config, cifar string, steps int) (run string, runErr error, finished bool) {
	t.Helper()
	return interruptRunAs(t, "", p, cfg, cifar, steps)
}

// interruptRunAs is interruptRun with the program started as prog (runDptrainAs).
func interruptRunAs(t *testing.T, prog, p string, cfg *config.Config, cifar string, steps int) (run string, runErr error, finished bool) {
	t.Helper()
	run = filepath.Join(t.TempDir(), "run")
	sets := []string{"output.dir=" + run, "training.steps=" + strconv.Itoa(steps), "training.checkpoint_every=2",
		"training.eval_every=0", "data.train_subset=1024", "data.test_subset=128"}
	if cfg.Optimizer.BatchSize > 64 {
		sets = append(sets, "optimizer.batch_size=64")
		if cfg.Optimizer.MinBatchSize > 32 {
			sets = append(sets, "optimizer.min_batch_size=32")
		}
	}
	switch cfg.Data.Dataset {
	case "mnist":
		sets = append(sets, "data.dataset=fashion-mnist")
	case "cifar10":
		sets = append(sets, "data.dir="+cifar)
	case "cifar10-jpeg":
		sets = append(sets, "data.dataset=cifar10", "data.dir="+cifar)
	}
	args := []string{"train", "--config", p, "--no-progress"}
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := runDptrainAs(t, prog, args...)
		done <- err
	}()
	deadline := time.Now().Add(120 * time.Second)
	for {
		if _, err := os.Stat(rundir.PrivatePath(run, rundir.CheckpointFile)); err == nil {
			break
		}
		select {
		case err := <-done:
			if err == nil {
				return run, nil, true
			}
			t.Fatalf("the run ended before its first checkpoint: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint after 120 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	select {
	case runErr = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not stop within 60 s of SIGTERM")
	}
	// A run that ended just as the signal came reports success.
	return run, runErr, runErr == nil
}

// The command printed to continue an interrupted run is the program as it was started
// (bin/dptrain from the README, ./dptrain, …), so that it can be pasted as it is.
func TestResumeHintNamesTheProgramAsStarted(t *testing.T) {
	if testing.Short() {
		t.Skip("trains")
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	defer signal.Stop(sig)
	// The quick start on the synthetic mixture, which needs no dataset installed.
	b, err := os.ReadFile("../../configs/quickstart.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(strings.Replace(string(b), "dataset: fashion-mnist", "dataset: synthetic-mixture", 1), "normalize: standard", "normalize: none", 1)
	p := filepath.Join(t.TempDir(), "quickstart.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadConfig(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for steps := 64; ; steps *= 4 {
		run, runErr, finished := interruptRunAs(t, "bin/dptrain", p, cfg, "", steps)
		if finished {
			if steps > 4000 {
				t.Fatal("every run finished before SIGTERM reached it")
			}
			continue
		}
		want := "bin/dptrain train --config " + filepath.Join(run, "config.yaml") + " --resume"
		if runErr == nil || !strings.Contains(runErr.Error(), want) {
			t.Fatalf("message %v does not give %q", runErr, want)
		}
		return
	}
}
