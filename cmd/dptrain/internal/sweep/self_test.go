package sweep

import (
	"context"
	"slices"
	"strconv"
	"testing"
)

func TestSelfWorker(t *testing.T) {
	c := SelfWorker("/bin/dptrain", "debug", "runs/x")(context.Background(), 4)
	want := []string{"/bin/dptrain", "--log-level", "debug", "sweep", "run-cell", "runs/x", "--index", "4", "--no-progress"}
	if !slices.Equal(c.Args, want) {
		t.Errorf("args %q, want %q", c.Args, want)
	}
}

func TestCellBLASThreads(t *testing.T) {
	t.Setenv("OPENBLAS_NUM_THREADS", "")
	if got := CellBLASThreads(); got != strconv.Itoa(BLASThreads) {
		t.Errorf("unset: %q", got)
	}
	t.Setenv("OPENBLAS_NUM_THREADS", "3")
	if got := CellBLASThreads(); got != "3" {
		t.Errorf("set to 3: %q", got)
	}
}
