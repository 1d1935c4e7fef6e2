package train

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/rundir"
)

// cancelOn is a log hook that cancels a context when a message starting with prefix is logged.
type cancelOn struct {
	prefix string
	cancel context.CancelFunc
}

func (c cancelOn) Levels() []logrus.Level { return logrus.AllLevels }

func (c cancelOn) Fire(e *logrus.Entry) error {
	if strings.HasPrefix(e.Message, c.prefix) {
		c.cancel()
	}
	return nil
}

// A signal before or during the preparation of a run (data, model, calibration, accountants)
// stops New with an InterruptedError that names the phase; no step runs, nothing is written
// but the run directory's lock.
func TestNewStopsWhenInterruptedDuringPreparation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	cfg, err := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + dir, "optimizer.noise_multiplier=auto", "privacy.target_epsilon=3"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = New(ctx, cfg, Options{})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted while") {
		t.Fatalf("New with a cancelled context: %v, want an interruption", err)
	}
	if !strings.Contains(err.Error(), "nothing was trained and no privacy was spent") {
		t.Errorf("message %q does not say that nothing was trained", err)
	}

	// Cancelled after the data are loaded (a signal while the features are computed): the
	// model and the calibration do not start.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	split := func(s *data.Split) (*data.Split, error) { cancel(); return s, nil }
	_, err = New(ctx, cfg, Options{TrainSplit: split})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted while building the model") {
		t.Fatalf("New cancelled after loading the data: %v, want an InterruptedError before the model", err)
	}
	if _, err := os.Stat(rundir.PrivatePath(dir, rundir.CheckpointFile)); err == nil {
		t.Error("an interrupted preparation wrote a checkpoint")
	}
	// A signal while σ is calibrated.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	log := logrus.New()
	log.SetOutput(io.Discard)
	log.AddHook(cancelOn{"calibrating the noise multiplier", cancel})
	_, err = New(ctx, cfg, Options{Log: log})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted while calibrating the noise multiplier") {
		t.Fatalf("New cancelled during the calibration: %v, want an interruption during the calibration", err)
	}

	// The lock was released: the same run starts now.
	tr, err := New(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatalf("start after the interrupted preparation: %v", err)
	}
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// One process writes a run directory: a second New on it fails at once, before loading the
// data, naming the PID that holds it; after the first is done the directory is free again.
func TestSecondWriterOfRunDirectoryRefused(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + dir})
	if err != nil {
		t.Fatal(err)
	}
	first, err := New(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A dataset that cannot be loaded: the refusal must come before the data.
	other, err := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + dir, "data.dataset=mnist", "data.dir=" + filepath.Join(t.TempDir(), "none")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(context.Background(), other, Options{})
	if err == nil || !strings.Contains(err.Error(), "in use") || !strings.Contains(err.Error(), fmt.Sprintf("PID %d", os.Getpid())) {
		t.Fatalf("second writer of %s: %v, want a refusal naming PID %d", dir, err, os.Getpid())
	}
	if _, err := first.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Run released the lock: a resume of the finished run may start.
	res, err := New(context.Background(), cfg, Options{Resume: true})
	if err != nil {
		t.Fatalf("resume after the first run ended: %v", err)
	}
	if _, err := New(context.Background(), cfg, Options{Resume: true}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("two resumes of one run: %v, want the second refused", err)
	}
	if _, err := res.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// A non-empty directory that dptrain did not write is refused, before anything is written;
// the user's files are left as they were.
func TestForeignOutputDirRefused(t *testing.T) {
	dir := t.TempDir()
	mine := []byte("# the user's own config\nlr: 3\n")
	os.WriteFile(filepath.Join(dir, rundir.ConfigFile), mine, 0o644)
	os.WriteFile(filepath.Join(dir, rundir.SummaryFile), []byte("{}"), 0o644)
	cfg, err := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + dir})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(context.Background(), cfg, Options{})
	if err == nil {
		tr.Run(context.Background())
		t.Fatalf("a run into %s (holding the user's config.yaml and summary.json) was accepted", dir)
	}
	if !strings.Contains(err.Error(), "not a dptrain run directory") || !strings.Contains(err.Error(), "output.dir") || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("message %q does not say how to choose another directory", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, rundir.ConfigFile)); !bytes.Equal(b, mine) {
		t.Error("the user's config.yaml was changed")
	}
	if _, err := os.Stat(rundir.PrivatePath(dir)); err == nil {
		t.Error("the refused run created private/ in the user's directory")
	}
}

// An empty --set output.dir= is refused (it used to fall back to runs/<name>), and so is a
// config file that holds no settings.
func TestEmptyOutputDirAndEmptyConfigRefused(t *testing.T) {
	for _, v := range []string{"output.dir=", "output.dir= ", "output.dir=~"} {
		if _, err := config.ParseConfig([]byte(synthetic), []string{v}); err == nil || !strings.Contains(err.Error(), "output.dir is empty") {
			t.Errorf("--set %s: %v, want a refusal", v, err)
		}
	}
	for _, doc := range []string{"", "# nothing\n", "---\n", "null\n", "~\n", "# a\n---\n# b\n"} {
		if _, err := config.ParseConfig([]byte(doc), nil); err == nil || !strings.Contains(err.Error(), "the file is empty") {
			t.Errorf("config %q: %v, want \"the file is empty\"", doc, err)
		}
	}
}
