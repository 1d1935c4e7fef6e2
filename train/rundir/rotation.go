package rundir

import (
	"fmt"
	"path/filepath"
	"slices"
)

// StepCheckpointName is the file name of the checkpoint taken after step.
func StepCheckpointName(step int) string { return fmt.Sprintf("checkpoint-%08d.dpt", step) }

// StepCheckpointGlob matches every StepCheckpointName.
const StepCheckpointGlob = "checkpoint-[0-9]*.dpt"

// OlderCheckpoints lists the step checkpoints in dir, newest first.
func OlderCheckpoints(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, StepCheckpointGlob))
	slices.Sort(m)
	slices.Reverse(m)
	return m
}
