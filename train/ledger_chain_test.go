package train

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modes"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/rundir"

	"github.com/dptrain/dptrain/ledger"
)

// chainedRun runs the synthetic config for 40 steps (a checkpoint every 10, all kept) into a
// new directory and returns it with the rdp ε of n steps of the run's record.
func chainedRun(t *testing.T) (dir string, epsOf func(n int) float64) {
	t.Helper()
	dir = t.TempDir()
	cfg, err := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + dir, "training.steps=40", "training.keep_checkpoints=5"})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := New(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ck, err := rundir.LoadCheckpoint(rundir.PrivatePath(dir, rundir.StepCheckpointName(20)))
	if err != nil {
		t.Fatal(err)
	}
	return dir, rdpOfSteps(t, tr, ck.Header.Ledger[0])
}

// rdpOfSteps returns the rdp ε (δ = 1e-5) of n steps of record, under tr's run declaration.
func rdpOfSteps(t *testing.T, tr *Trainer, record accounting.Step) func(n int) float64 {
	return func(n int) float64 {
		a, err := modes.New("rdp", tr.declaredRun(tr.opt))
		if err != nil {
			t.Fatal(err)
		}
		r := record
		r.Count = n
		if err := a.Compose(r); err != nil {
			t.Fatal(err)
		}
		g, err := a.Epsilon(1e-5)
		if err != nil {
			t.Fatal(err)
		}
		return g.Epsilon
	}
}

// ledgerLines returns the lines of the run's ledger, each with its newline.
func ledgerLines(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(rundir.PrivatePath(dir, rundir.LedgerFile))
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
}

func writeLedgerLines(t *testing.T, dir string, lines []string) {
	t.Helper()
	s := strings.Join(lines, "")
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	if err := os.WriteFile(rundir.PrivatePath(dir, rundir.LedgerFile), []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// rewriteCheckpointHeader applies edit to the JSON header of the checkpoint at path and writes
// it back with a valid checksum, as a hand edit that knows the format would.
func rewriteCheckpointHeader(t *testing.T, path string, edit func(h map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint32(b[8:])
	var h map[string]any
	if err := json.Unmarshal(b[12:12+n], &h); err != nil {
		t.Fatal(err)
	}
	edit(h)
	hdr, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	out.Write(b[:8])
	binary.Write(&out, binary.LittleEndian, uint32(len(hdr)))
	out.Write(hdr)
	out.Write(b[12+n : len(b)-sha256.Size])
	sum := sha256.Sum256(out.Bytes())
	out.Write(sum[:])
	// A new file, not a write through the hard link checkpoint.dpt may share.
	os.Remove(path)
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// rechain rewrites every line's prev so that the chain verifies again, as someone who knows
// the format would after editing a line.
func rechain(t *testing.T, lines []string) []string {
	t.Helper()
	prev := ""
	out := make([]string, len(lines))
	for i, l := range lines {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if err := json.Unmarshal(m["prev"], &prev); err != nil {
				prev = ""
			}
		}
		p, _ := json.Marshal(prev)
		m["prev"] = p
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		prev = hex.EncodeToString(sum[:])
		out[i] = string(b) + "\n"
	}
	return out
}

// A resume reads the ledger only when its hash chain verifies and reaches the head every
// checkpoint recorded. After 40 steps, a resume from the step-20 checkpoint must count 60
// steps; each tampering with the ledger (or the checkpoint's record of it) must stop the
// resume with a *ledger.Error naming the damage, and leave the ledger as it found it.
func TestResumeRefusesTamperedLedger(t *testing.T) {
	src, epsOf := chainedRun(t)
	from := func(dir string) string { return rundir.PrivatePath(dir, rundir.StepCheckpointName(20)) }
	sigma100 := func(l string) string {
		return strings.Replace(l, `"NoiseMultiplier":1,`, `"NoiseMultiplier":100,`, 1)
	}
	for _, c := range []struct {
		name   string
		tamper func(t *testing.T, dir string)
		damage ledger.Damage // "": the resume must succeed
		line   int           // the line the error names; 0: not checked
	}{
		{name: "untampered", tamper: func(*testing.T, string) {}},
		{name: "deleted", damage: ledger.Missing, tamper: func(t *testing.T, dir string) {
			os.Remove(rundir.PrivatePath(dir, rundir.LedgerFile))
		}},
		{name: "truncated below the checkpoint", damage: ledger.Truncated, line: 16, tamper: func(t *testing.T, dir string) {
			writeLedgerLines(t, dir, ledgerLines(t, dir)[:15])
		}},
		{name: "truncated to the checkpoint resumed from", damage: ledger.Truncated, line: 21, tamper: func(t *testing.T, dir string) {
			// The step-20 checkpoint's own head is intact; the newer checkpoints held 40 lines.
			writeLedgerLines(t, dir, ledgerLines(t, dir)[:20])
		}},
		{name: "empty", damage: ledger.Truncated, line: 1, tamper: func(t *testing.T, dir string) {
			os.WriteFile(rundir.PrivatePath(dir, rundir.LedgerFile), nil, 0o600)
		}},
		{name: "sigma edited", damage: ledger.Edited, line: 5, tamper: func(t *testing.T, dir string) {
			l := ledgerLines(t, dir)
			l[4] = sigma100(l[4])
			writeLedgerLines(t, dir, l)
		}},
		{name: "sigma edited on every line", damage: ledger.Edited, line: 1, tamper: func(t *testing.T, dir string) {
			l := ledgerLines(t, dir)
			for i := range l {
				l[i] = sigma100(l[i])
			}
			writeLedgerLines(t, dir, l)
		}},
		{name: "last line edited", damage: ledger.HeadMismatch, line: 40, tamper: func(t *testing.T, dir string) {
			l := ledgerLines(t, dir)
			l[39] = sigma100(l[39])
			writeLedgerLines(t, dir, l)
		}},
		{name: "edited and chained again", damage: ledger.HeadMismatch, line: 20, tamper: func(t *testing.T, dir string) {
			l := ledgerLines(t, dir)
			for i := range l {
				l[i] = sigma100(l[i])
			}
			writeLedgerLines(t, dir, rechain(t, l))
		}},
		{name: "two lines swapped", damage: ledger.Reordered, line: 5, tamper: func(t *testing.T, dir string) {
			l := ledgerLines(t, dir)
			l[4], l[5] = l[5], l[4]
			writeLedgerLines(t, dir, l)
		}},
		{name: "line inserted", damage: ledger.Inserted, line: 11, tamper: func(t *testing.T, dir string) {
			l := ledgerLines(t, dir)
			l = append(l[:10], append([]string{l[6]}, l[10:]...)...)
			writeLedgerLines(t, dir, l)
		}},
		{name: "line removed", damage: ledger.BrokenChain, line: 7, tamper: func(t *testing.T, dir string) {
			l := ledgerLines(t, dir)
			writeLedgerLines(t, dir, append(l[:6], l[7:]...))
		}},
		{name: "torn inside the checkpoint", damage: ledger.Truncated, line: 20, tamper: func(t *testing.T, dir string) {
			l := ledgerLines(t, dir)[:20]
			l[19] = l[19][:len(l[19])/2]
			os.WriteFile(rundir.PrivatePath(dir, rundir.LedgerFile), []byte(strings.Join(l, "")), 0o600)
			for _, s := range []int{30, 40} {
				os.Remove(rundir.PrivatePath(dir, rundir.StepCheckpointName(s)))
			}
			os.Remove(rundir.PrivatePath(dir, rundir.CheckpointFile))
		}},
		{name: "not json", damage: ledger.Malformed, line: 3, tamper: func(t *testing.T, dir string) {
			l := ledgerLines(t, dir)
			l[2] = "{\"branch\":0,\"step\":3,\n"
			writeLedgerLines(t, dir, l)
		}},
		{name: "checkpoint head changed", damage: ledger.HeadMismatch, line: 20, tamper: func(t *testing.T, dir string) {
			rewriteCheckpointHeader(t, from(dir), func(h map[string]any) {
				h["ledger_head"] = strings.Repeat("ab", sha256.Size)
			})
		}},
		{name: "checkpoint without a head", damage: ledger.Unchained, tamper: func(t *testing.T, dir string) {
			rewriteCheckpointHeader(t, from(dir), func(h map[string]any) {
				delete(h, "ledger_head")
				delete(h, "ledger_lines")
			})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
				t.Fatal(err)
			}
			c.tamper(t, dir)
			before, _ := os.ReadFile(rundir.PrivatePath(dir, rundir.LedgerFile))
			sum, err := resume(t, dir, Options{ResumeFrom: from(dir)}, "output.dir="+dir)
			if c.damage == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got, want := sum.Epsilon[0].Epsilon, epsOf(60); math.Abs(got-want) > 1e-12*want || sum.LedgerSteps != 60 {
					t.Errorf("ε = %v over %d ledger steps, want ε of 60 steps %v", got, sum.LedgerSteps, want)
				}
				return
			}
			var le *ledger.Error
			if !errors.As(err, &le) {
				if err == nil {
					t.Fatalf("resumed: ε = %v over %d ledger steps (ε of the 60 executed: %v), want a %q ledger error",
						sum.Epsilon[0].Epsilon, sum.LedgerSteps, epsOf(60), c.damage)
				}
				t.Fatalf("error %v (%T), want a *ledger.Error %q", err, err, c.damage)
			}
			if le.Damage != c.damage || c.line != 0 && le.Line != c.line || le.Path != rundir.PrivatePath(dir, rundir.LedgerFile) {
				t.Errorf("%s: line %d, %q; want line %d, %q", le.Path, le.Line, le.Damage, c.line, c.damage)
			}
			t.Log(err)
			words := []string{string(c.damage), "restore", "backup", "still counts"}
			if c.damage == ledger.Unchained {
				words = []string{string(c.damage), "before the ledger", "still counts"}
			}
			for _, want := range words {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if after, _ := os.ReadFile(rundir.PrivatePath(dir, rundir.LedgerFile)); !bytes.Equal(before, after) {
				t.Errorf("the refused resume changed the ledger")
			}
		})
	}
}

// Removing the lock file does not unlock the run directory: a second trainer on it is
// refused while the first holds it, and the first still runs to its end.
func TestSecondWriterRefusedAfterLockFileRemoved(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + dir, "training.steps=10"})
	if err != nil {
		t.Fatal(err)
	}
	first, err := New(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	if err := os.Remove(rundir.PrivatePath(dir, rundir.LockFile)); err != nil {
		t.Fatal(err)
	}
	second, err := New(context.Background(), cfg, Options{})
	if !errors.Is(err, rundir.ErrLocked) || !strings.Contains(err.Error(), "in use") {
		if second != nil {
			second.Close()
		}
		t.Fatalf("a second trainer after rm private/lock: %v, want %v", err, rundir.ErrLocked)
	}
	if _, err := first.Run(context.Background()); err != nil {
		t.Fatalf("the first trainer: %v", err)
	}
	// Released at the end of the run: a resume takes the directory.
	resumed, err := New(context.Background(), cfg, Options{Resume: true})
	if err != nil {
		t.Fatalf("a resume after the run: %v", err)
	}
	resumed.Close()

	// The same for rundir.LockDir as the sweeps use it.
	cell := t.TempDir()
	release, err := rundir.LockDir(cell, "lock", "cell 0")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	os.Remove(filepath.Join(cell, "lock"))
	if r, err := rundir.LockDir(cell, "lock", "cell 0"); !errors.Is(err, rundir.ErrLocked) {
		if r != nil {
			r()
		}
		t.Errorf("LockDir after its file was removed: %v, want %v", err, rundir.ErrLocked)
	}
}

// A ledger removed or replaced while the run writes it stops the run at its next step, before
// a step goes unrecorded: the file at private/ledger.jsonl must be the one the run holds.
func TestRunStopsWhenLedgerRemovedWhileRunning(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage ledger.Damage
		do     func(path string) error
	}{
		{"removed", ledger.Missing, os.Remove},
		{"replaced", ledger.Replaced, func(path string) error {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			tmp := path + ".edited"
			if err := os.WriteFile(tmp, b, 0o600); err != nil {
				return err
			}
			return os.Rename(tmp, path)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			cfg, err := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + dir, "training.steps=20"})
			if err != nil {
				t.Fatal(err)
			}
			path := rundir.PrivatePath(dir, rundir.LedgerFile)
			hook := HookFunc(func(s *StepInfo) error {
				if s.Step == 5 {
					return c.do(path)
				}
				return nil
			})
			tr, err := New(context.Background(), cfg, Options{Hooks: []Hook{hook}})
			if err != nil {
				t.Fatal(err)
			}
			sum, err := tr.Run(context.Background())
			var le *ledger.Error
			if !errors.As(err, &le) || le.Damage != c.damage {
				steps := 0
				if sum != nil {
					steps = sum.LedgerSteps
				}
				t.Fatalf("ledger %s at step 5: %v (%d ledger steps), want a %q ledger error", c.name, err, steps, c.damage)
			}
			t.Log(err)
			if le.Line != 5 || !strings.Contains(err.Error(), "stops") {
				t.Errorf("error at line %d: %v; want it found after line 5, saying the run stops", le.Line, err)
			}
		})
	}
}

// A second trainer started without --resume on a run directory that another process is running
// is told the directory is in use, not to pass --resume (which would then be refused too).
func TestSecondNewRunOnARunningDirectoryIsInUse(t *testing.T) {
	dir := t.TempDir()
	cfg, err := config.ParseConfig([]byte(synthetic), []string{"output.dir=" + dir, "training.steps=10"})
	if err != nil {
		t.Fatal(err)
	}
	done, err := New(context.Background(), cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := done.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The directory now holds a checkpoint; a resume takes it and runs on.
	first, err := New(context.Background(), cfg, Options{Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := New(context.Background(), cfg, Options{})
	if second != nil {
		second.Close()
	}
	if !errors.Is(err, rundir.ErrLocked) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("a new run beside a running one: %v, want the directory in use", err)
	}
}
