package bench

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// ChildPeakRSS measures the peak memory of one kind of step (sgd or dpsgd) in a child process
// of its own and returns it in MB: it runs this binary, which must be dptrain, as "dptrain
// bench throughput --measure-child KIND" with c's model, engine, batch and warm-up and at most
// 5 timed steps, which calls PeakRSS and prints KiB.
func ChildPeakRSS(c ThroughputConfig, kind string) (float64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	out, err := exec.Command(exe, "bench", "throughput", "--model", c.Model, "--engine", c.Engine, "--batch", strconv.Itoa(c.Batch),
		"--warmup", strconv.Itoa(c.Warmup), "--steps", strconv.Itoa(min(c.Steps, 5)), "--measure-child", kind).Output()
	if err != nil {
		return 0, fmt.Errorf("%s child: %w", kind, err)
	}
	kib, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		return 0, fmt.Errorf("%s child printed %q", kind, out)
	}
	return kib / 1024, nil
}
