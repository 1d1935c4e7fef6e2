package train

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/train/rundir"
)

// A ledger line duplicated (by hand, or by a second writer) is damage, not an abandoned
// branch: the resume refuses it, naming the line.
func TestResumeCatchesDuplicatedLedgerLine(t *testing.T) {
	dir := t.TempDir()
	runUntilCrash(t, dir, 15)
	path := rundir.PrivatePath(dir, rundir.LedgerFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	dup := strings.Join(lines[:5], "") + lines[4] + strings.Join(lines[5:], "")
	os.WriteFile(path, []byte(dup), 0o600)
	if _, err := resume(t, dir, Options{}); err == nil || !strings.Contains(err.Error(), "line 6") || !strings.Contains(err.Error(), "damaged") {
		t.Errorf("resume with a duplicated ledger line: %v, want the damage named", err)
	}

	// A ledger replaced by a shorter one (here: its first five steps) is refused too.
	os.WriteFile(path, []byte(strings.Join(lines[:5], "")), 0o600)
	if _, err := resume(t, dir, Options{}); err == nil || !strings.Contains(err.Error(), "ledger") {
		t.Errorf("resume with a ledger shorter than the checkpoint: %v", err)
	}
}

// A NaN parameter in a checkpoint is reported as a damaged file, not as a divergence with
// advice about the learning rate.
func TestResumeReportsNaNParameterOfCheckpoint(t *testing.T) {
	dir := t.TempDir()
	runUntilCrash(t, dir, 15)
	path := rundir.PrivatePath(dir, rundir.CheckpointFile)
	c, err := rundir.LoadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	c.Vectors["params"][3] = float32(math.NaN())
	if err := rundir.SaveCheckpoint(path, c); err != nil {
		t.Fatal(err)
	}
	_, err = resume(t, dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "parameter 3 of the checkpoint") || !strings.Contains(err.Error(), "is NaN: the file is damaged or the run diverged") {
		t.Fatalf("resume from a checkpoint with a NaN parameter: %v", err)
	}
	if strings.Contains(err.Error(), "learning rate") {
		t.Errorf("message %q blames the learning rate", err)
	}
}

// After the newest checkpoint is truncated in place, the fallbacks offered are other files,
// not the step file that is the same inode (checkpoint.dpt is a hard link to it).
func TestTruncatedCheckpointFallbacksAreOtherFiles(t *testing.T) {
	dir := t.TempDir()
	runUntilCrash(t, dir, 25) // checkpoints at steps 10 and 20
	path := rundir.PrivatePath(dir, rundir.CheckpointFile)
	newest := rundir.PrivatePath(dir, rundir.StepCheckpointName(20))
	a, _ := os.Stat(path)
	b, _ := os.Stat(newest)
	if a == nil || b == nil || !os.SameFile(a, b) {
		t.Skip("checkpoint.dpt is not a hard link on this file system")
	}
	if err := os.Truncate(path, a.Size()/2); err != nil {
		t.Fatal(err)
	}
	_, err := resume(t, dir, Options{})
	if err == nil {
		t.Fatal("resume from a truncated checkpoint succeeded")
	}
	if strings.Contains(err.Error(), filepath.Base(newest)) {
		t.Errorf("the fallbacks offer %s, the same damaged file: %v", newest, err)
	}
	if !strings.Contains(err.Error(), rundir.StepCheckpointName(10)) {
		t.Errorf("the fallbacks do not offer the older checkpoint: %v", err)
	}
}

// A NaN parameter in a model file is refused when it is read, naming the parameter.
func TestModelFileNaNParameterReported(t *testing.T) {
	tr, _ := newTrainer(t)
	tr.model.Params()[7] = float32(math.NaN())
	path := filepath.Join(t.TempDir(), "m.dpm")
	if err := models.Save(path, tr.model); err != nil {
		t.Fatal(err)
	}
	if _, err := models.Load(path); err == nil || !strings.Contains(err.Error(), "parameter 7 of the model file is NaN: the file is damaged or the run diverged") {
		t.Errorf("loading a model with a NaN parameter: %v", err)
	}
}
