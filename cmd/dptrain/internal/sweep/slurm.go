package sweep

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// SlurmOptions shape the job array that EmitSlurm writes.
type SlurmOptions struct {
	// Executable is the dptrain binary the jobs call (an absolute path on the cluster).
	Executable string
	// Concurrent is K in --array=...%K: at most K cells run at once (0: no limit).
	Concurrent int
	// CPUsPerTask is each cell's --cpus-per-task; GOMAXPROCS follows it, and OpenBLAS stays
	// on BLASThreads unless OPENBLAS_NUM_THREADS is set where the array is submitted.
	CPUsPerTask int
	// Tasks, when above 1, runs each cell as one data-parallel job of that many ranks
	// (--ntasks, launched with OpenMPI's mpirun inside the allocation; docs/distributed.md):
	// the dptrain on the cluster must be built with MPI. CPUsPerTask is then per rank.
	Tasks int
	// Time is each cell's --time limit (empty: the partition's default).
	Time string
	// Partition is --partition (empty: the cluster's default).
	Partition string
	// Unfinished leaves the finished cells out of the array, so that a re-submission runs only
	// the cells still to run (a finished cell is skipped anyway, but holds an allocation).
	Unfinished bool
}

// Slurm files, written into DIR/slurm.
const (
	SlurmDir     = "slurm"
	SlurmArray   = "array.sbatch"
	SlurmCollect = "collect.sbatch"
	SlurmSubmit  = "submit.sh"
)

// EmitSlurm writes an sbatch job array that runs every available cell (o.Unfinished: every
// available cell that has not finished) with `dptrain sweep
// run-cell DIR --index $SLURM_ARRAY_TASK_ID` (requeued cells resume from their checkpoints), a
// collector job, and submit.sh, which submits the array and then the collector with
// --dependency=afterany on it (so that failed cells are reported, not hidden). Arguments to
// submit.sh are passed to the collector's sbatch (e.g. --wait). dptrain links no Slurm library:
// these are plain text files.
func EmitSlurm(p *Plan, o SlurmOptions) ([]string, error) {
	if o.Executable == "" || !filepath.IsAbs(o.Executable) {
		return nil, fmt.Errorf("--executable %q: give the absolute path of dptrain on the cluster", o.Executable)
	}
	if o.CPUsPerTask < 1 {
		return nil, fmt.Errorf("--cpus-per-task %d: want at least 1", o.CPUsPerTask)
	}
	if o.Tasks < 0 {
		return nil, fmt.Errorf("--ntasks %d: want at least 1", o.Tasks)
	}
	var idx []string
	for i, c := range p.Cells {
		if c.Unavailable == "" && !(o.Unfinished && p.Done(i)) {
			idx = append(idx, strconv.Itoa(i))
		}
	}
	if len(idx) == 0 {
		if o.Unfinished {
			return nil, fmt.Errorf("every available cell of the plan in %s has finished: nothing to run", p.dir)
		}
		return nil, fmt.Errorf("the plan in %s has no available cell to run", p.dir)
	}
	array := strings.Join(idx, ",")
	if o.Concurrent > 0 {
		array += "%" + strconv.Itoa(o.Concurrent)
	}
	dir := filepath.Join(p.dir, SlurmDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	header := func(name, out string, cpus int) string {
		var b strings.Builder
		fmt.Fprintf(&b, "#!/bin/bash\n#SBATCH --job-name=%s\n#SBATCH --output=%s\n#SBATCH --cpus-per-task=%d\n", name, filepath.Join(dir, out), cpus)
		if o.Time != "" {
			fmt.Fprintf(&b, "#SBATCH --time=%s\n", o.Time)
		}
		if o.Partition != "" {
			fmt.Fprintf(&b, "#SBATCH --partition=%s\n", o.Partition)
		}
		return b.String()
	}
	name := "dptrain-" + p.Suite
	launch := ""
	if o.Tasks > 1 {
		// One rank per task; mpirun takes the ranks from the allocation, and binding is left
		// to the kernel so that each rank's GOMAXPROCS threads spread over its CPUs.
		launch = "mpirun --bind-to none "
	}
	arr := header(name, "cell-%a.out", o.CPUsPerTask) + tasks(o.Tasks) +
		fmt.Sprintf("#SBATCH --array=%s\n#SBATCH --requeue\n#SBATCH --open-mode=append\n\n", array) +
		"# One cell per array task; a requeued or re-submitted cell resumes from its checkpoint,\n" +
		"# and a finished cell is skipped. Slurm's SIGTERM (requeue, preemption, time limit)\n" +
		"# checkpoints the cell; its output file keeps every attempt (--open-mode=append).\n" +
		"# The cell's CPUs go to Go (GOMAXPROCS); OpenBLAS stays on one thread unless\n" +
		"# OPENBLAS_NUM_THREADS is set at submission: its threads spin between GEMMs on the\n" +
		"# cores the conv path's goroutines need.\n" +
		fmt.Sprintf("export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-%d}\n", BLASThreads) +
		fmt.Sprintf("export GOMAXPROCS=${SLURM_CPUS_PER_TASK:-%d}\n", o.CPUsPerTask) +
		fmt.Sprintf("exec %s%s sweep run-cell %s --index \"$SLURM_ARRAY_TASK_ID\" --no-progress\n", launch, shq(o.Executable), shq(p.dir))
	col := header(name+"-collect", "collect.out", 1) +
		"\n# Runs after the array whatever its outcome (afterany), so that failed cells are listed.\n" +
		fmt.Sprintf("exec %s sweep collect %s\n", shq(o.Executable), shq(p.dir))
	sub := "#!/bin/bash\n# Submits the cells as a job array, then the collector after it (afterany).\n" +
		"# Extra arguments go to the collector's sbatch, e.g. --wait.\nset -euo pipefail\n" +
		fmt.Sprintf("array=$(sbatch --parsable %s)\narray=${array%%%%;*}\n", shq(filepath.Join(dir, SlurmArray))) +
		"echo \"submitted cells: job $array\"\n" +
		fmt.Sprintf("sbatch \"$@\" --dependency=afterany:\"$array\" %s\n", shq(filepath.Join(dir, SlurmCollect)))
	var files []string
	for _, f := range []struct{ name, text string }{{SlurmArray, arr}, {SlurmCollect, col}, {SlurmSubmit, sub}} {
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, []byte(f.text), 0o755); err != nil {
			return nil, err
		}
		files = append(files, path)
	}
	return files, nil
}

// tasks is the --ntasks line of a data-parallel cell ("" for one task).
func tasks(n int) string {
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf("#SBATCH --ntasks=%d\n", n)
}

// shq quotes s for bash.
func shq(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
