package train

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/dptrain/dptrain/ledger"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/rundir"
)

// toLegacyLayout moves a run's private files to the top of its directory, where a dptrain
// before private/ wrote them. That dptrain had no ledger file and kept the seed in config.yaml.
func toLegacyLayout(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(rundir.PrivatePath(dir))
	if err != nil {
		t.Fatal(err)
	}
	if seed, err := rundir.ReadSeed(dir); err != nil || seed == nil {
		t.Fatalf("seed: %v, %v", seed, err)
	} else {
		cfg, err := config.LoadConfig(filepath.Join(dir, rundir.ConfigFile), nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Seed = seed
		b, err := yaml.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, rundir.ConfigFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range entries {
		switch e.Name() {
		case rundir.PrivateReadme, rundir.LedgerFile, rundir.SeedFile, rundir.TimingFile:
			continue
		}
		if err := os.Rename(rundir.PrivatePath(dir, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	os.RemoveAll(rundir.PrivatePath(dir))
}

// A run directory written by an older dptrain (checkpoints and metrics at the top) is refused,
// whether resumed, resumed from a named checkpoint or overwritten, with the command that moves
// its files into private/; once they are moved, the run resumes (given its ledger).
func TestLegacyRunDirectoryIsRefusedUntilMoved(t *testing.T) {
	dir := t.TempDir()
	runUntilCrash(t, dir, 15)
	ledgerBytes, err := os.ReadFile(rundir.PrivatePath(dir, rundir.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	toLegacyLayout(t, dir)
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"--resume", Options{Resume: true}},
		{"--resume-from", Options{Resume: true, ResumeFrom: filepath.Join(dir, "checkpoint-00000010.dpt")}},
		{"a new run", Options{}},
	} {
		cfg, err := config.LoadConfig(filepath.Join(dir, rundir.ConfigFile), nil)
		if err != nil {
			t.Fatal(err)
		}
		// Refused before the data are read (New), at the latest when the run starts.
		tr, err := New(context.Background(), cfg, tc.opts)
		if err == nil {
			_, err = tr.Run(context.Background())
		}
		for _, want := range []string{"older dptrain", "mkdir -p " + rundir.PrivatePath(dir), filepath.Join(dir, rundir.CheckpointFile), filepath.Join(dir, rundir.MetricsCSV)} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: err = %v, want it to say %q", tc.name, err, want)
			}
		}
	}
	if _, err := os.Stat(rundir.PrivatePath(dir)); err == nil {
		t.Error("a refused run created private/")
	}
	// What the error says to do.
	os.MkdirAll(rundir.PrivatePath(dir), 0o700)
	for _, pat := range []string{"checkpoint*.dpt", "metrics.*"} {
		m, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, f := range m {
			if err := os.Rename(f, rundir.PrivatePath(dir, filepath.Base(f))); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The layout is accepted; the checkpoints were written with a ledger, which must be there.
	var le *ledger.Error
	if _, err := resume(t, dir, Options{}); !errors.As(err, &le) || le.Damage != ledger.Missing {
		t.Fatalf("after moving the files into private/, without the ledger: %v, want a missing ledger", err)
	}
	if err := os.WriteFile(rundir.PrivatePath(dir, rundir.LedgerFile), ledgerBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	sum, err := resume(t, dir, Options{})
	if err != nil {
		t.Fatalf("after moving the files into private/: %v", err)
	}
	if sum.Steps != 30 {
		t.Errorf("resumed run: %d steps, want 30", sum.Steps)
	}
}

// The realised (un-noised) batch size is kept in private/ metrics, never in the progress line.
func TestProgressDoesNotShowRealisedBatchSize(t *testing.T) {
	line := progressLine(&StepInfo{Step: 3, TotalSteps: 10, BatchSize: 48213, Loss: 0.5, Accuracy: 0.5}, nil, 20, 0)
	if strings.Contains(line, "48213") || strings.Contains(line, "batch") {
		t.Errorf("the progress line shows the realised batch size: %s", line)
	}
}
