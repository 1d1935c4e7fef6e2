package rundir_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dptrain/dptrain/train/rundir"
)

// A run directory keeps its checkpoints in private/; a checkpoint saved there is read back
// whole, its checksum verified.
func ExampleSaveCheckpoint() {
	dir, err := os.MkdirTemp("", "run")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := rundir.MakePrivateDir(dir); err != nil {
		fmt.Println(err)
		return
	}
	path := rundir.PrivatePath(dir, rundir.StepCheckpointName(20))
	c := &rundir.Checkpoint{Header: rundir.CheckpointHeader{Step: 20, NoiseMultiplier: 1.1},
		Vectors: map[string][]float32{"params": {0.5, -1, 2}}}
	if err := rundir.SaveCheckpoint(path, c); err != nil {
		fmt.Println(err)
		return
	}
	back, err := rundir.LoadCheckpoint(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	rel, _ := filepath.Rel(dir, path)
	fmt.Println(rel)
	fmt.Println(back.Header.Step, back.Header.NoiseMultiplier, back.Vectors["params"])
	fmt.Println(rundir.IsRunDir(dir))
	// Output:
	// private/checkpoint-00000020.dpt
	// 20 1.1 [0.5 -1 2]
	// true
}
