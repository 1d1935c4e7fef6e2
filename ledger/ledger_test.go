package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

func record() []accounting.Step {
	return []accounting.Step{{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, Neighbouring: accounting.AddRemove,
		NoiseMultiplier: 1, SampleRate: 0.01, Sensitivity: 1, NoiseStd: 1}}
}

func quiet(string, ...any) {}

// A ledger written by one File reads back whole; a trajectory that continues from an older
// step opens a new branch, whose lines verify too; a checkpoint's anchor is met only by the
// ledger that wrote it.
func TestAppendBranchAndReaches(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	l, err := Open(path, nil, true, quiet)
	if err != nil {
		t.Fatal(err)
	}
	for step := 1; step <= 3; step++ {
		if err := l.Append(step, record()); err != nil {
			t.Fatal(err)
		}
	}
	at2 := Anchor{Lines: 2, From: "step 2"}
	b, _ := os.ReadFile(path)
	at2.Head = hashLine([]byte(strings.Split(string(b), "\n")[1]))
	at3 := l.Anchor("step 3")
	l.Close()

	l, err = Open(path, []Anchor{at2, at3}, false, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if l.Executed() != 3 || l.Top() != 3 || l.Lines() != 3 || l.Head() != at3.Head || len(l.Records()) != 1 || l.Records()[0].Steps() != 3 {
		t.Fatalf("read back: %d executed, top %d, %d lines, %d records", l.Executed(), l.Top(), l.Lines(), len(l.Records()))
	}
	// Continue from step 2: a new branch.
	if err := l.Append(3, record()); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(4, record()); err != nil {
		t.Fatal(err)
	}
	if err := l.Append(9, record()); err == nil {
		t.Error("step 9 after step 4 was recorded")
	}
	l.Close()
	b, _ = os.ReadFile(path)
	if !strings.Contains(string(b), `"branch":1,"step":3,`) {
		t.Errorf("the continuation from step 2 is not a new branch:\n%s", b)
	}
	l, err = Open(path, []Anchor{at2, at3}, false, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if l.Executed() != 5 {
		t.Errorf("%d steps executed, want 5", l.Executed())
	}
	for _, c := range []struct {
		a    Anchor
		want Damage
	}{
		{at3, ""},
		{Anchor{Lines: 6, Head: at3.Head}, Truncated},
		{Anchor{Lines: 2, Head: at3.Head}, HeadMismatch},
		{Anchor{Lines: 2}, Unchained},
		{Anchor{Lines: -1, Head: Genesis}, HeadMismatch},
		{Anchor{Lines: 0, Head: Genesis}, ""},
	} {
		err := l.Reaches(c.a)
		var le *Error
		if c.want == "" && err != nil || c.want != "" && (!errors.As(err, &le) || le.Damage != c.want) {
			t.Errorf("Reaches(%+v) = %v, want %q", c.a, err, c.want)
		}
	}
}

// A second process (here, a second open) is refused a store in use; a ledger removed under a
// writer is reported at the next append.
func TestStoreLockAndRemoval(t *testing.T) {
	dir := t.TempDir()
	s, err := OpenStore(dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenStore(dir, quiet); !errors.Is(err, ErrInUse) {
		t.Errorf("second OpenStore: %v, want ErrInUse", err)
	}
	if err := s.Append(1, record()); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, FileName))
	var le *Error
	if err := s.Append(2, record()); !errors.As(err, &le) || le.Damage != Missing || !le.Running {
		t.Errorf("append after removal: %v, want a running %q *Error", err, Missing)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = OpenStore(dir, quiet)
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	s.Close()
}
