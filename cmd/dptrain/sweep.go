package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/sweep"
	"github.com/dptrain/dptrain/cmd/dptrain/internal/sweepline"
	"github.com/dptrain/dptrain/internal/mpi"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/rundir"
)

func init() { subcommands = append(subcommands, newSweepCmd) }

func newSweepCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Benchmark suites: plan a grid of runs, run it locally or on Slurm, collect tables and plots",
		Long: `A suite file (benchmarks/suites/*.yaml) names base configs and a grid of axes (algorithms,
datasets, target ε, batch sizes, seeds, any --set key). Plan it into a directory, run the cells
locally or as a Slurm job array, and collect results.csv, results.json, results.md and plots.`,
		Example: `  dptrain sweep plan benchmarks/suites/optimizers-fmnist.yaml --out runs/opt
  dptrain sweep run runs/opt --workers 2
  dptrain sweep collect runs/opt
  dptrain sweep emit --slurm runs/opt --cpus-per-task 4 --concurrent 16 && bash runs/opt/slurm/submit.sh`,
	}
	cmd.AddCommand(newSweepPlanCmd(a), newSweepRunCmd(a), newSweepRunCellCmd(a), newSweepCollectCmd(a), newSweepEmitCmd(a))
	return cmd
}

func newSweepPlanCmd(a *app) *cobra.Command {
	var (
		out  string
		sets []string
	)
	cmd := &cobra.Command{
		Use:   "plan SUITE --out DIR",
		Short: "Resolve every cell of a suite into a config in DIR, and write the cell table",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("--out DIR is required: the directory that will hold the cells")
			}
			s, err := sweep.LoadSuite(args[0])
			if err != nil {
				return err
			}
			p, err := sweep.MakePlan(s, out, sets)
			if err != nil {
				return err
			}
			b, err := os.ReadFile(filepath.Join(p.Dir(), sweep.CellsTable))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d cells planned in %s\n%s", s.Name, len(p.Cells), out, b)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "plan directory")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a config key in every cell, after the suite's own (repeatable): --set training.epochs=1")
	return cmd
}

func newSweepRunCmd(a *app) *cobra.Command {
	var workers int
	cmd := &cobra.Command{
		Use:   "run DIR",
		Short: "Run the unfinished cells of a plan locally with a pool of worker processes (resumable)",
		Long: `Runs every unfinished cell in its own dptrain process, at most --workers at a time, each
with the machine's CPUs divided among the workers (GOMAXPROCS; OpenBLAS stays on one thread
unless OPENBLAS_NUM_THREADS is set). A line is printed as each cell ends: its accuracy, ε, time,
the cells left and an estimate of the time left. Finished cells are skipped; Ctrl-C or SIGTERM
sends each running cell SIGTERM, which checkpoints it, and the next run resumes it. A cell that
another process runs is reported as running elsewhere. Each cell's output goes to its log.txt.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := sweep.LoadPlan(args[0])
			if err != nil {
				return err
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			ctx, received, stop := signalContext(cmd.Context())
			defer stop()
			a.log.Infof("running %d cells of %s with %d workers, GOMAXPROCS=%d and %s OpenBLAS thread(s) each", len(p.Cells), p.Suite, workers, sweep.Threads(workers), sweep.CellBLASThreads())
			out := cmd.OutOrStdout()
			rep, err := sweep.Local{
				Workers: workers,
				Worker:  sweep.SelfWorker(exe, a.logLevel, p.Dir()),
				OnCell:  func(ev sweep.CellEvent) { fmt.Fprintln(out, sweepline.Cell(ev)) },
			}.Run(ctx, p)
			fmt.Fprint(out, sweepline.Totals(p.Suite, rep))
			if sig := received(); sig != nil {
				return &exitError{status: exitStatus(sig), msg: fmt.Sprintf("%s: interrupted; the %d running cells were asked to checkpoint. Resume with:\n  %s sweep run %s", sig, len(rep.Interrupted), invoked(cmd), args[0])}
			}
			if err != nil {
				return err
			}
			if rep.Failed > 0 {
				return fmt.Errorf("%d cells failed: see their log.txt, fix, and run `%s sweep run %s` again", rep.Failed, invoked(cmd), args[0])
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&workers, "workers", 1, "cells run at once")
	return cmd
}

func newSweepRunCellCmd(a *app) *cobra.Command {
	var (
		index  int
		noProg bool
	)
	cmd := &cobra.Command{
		Use:   "run-cell DIR --index I",
		Short: "Run one cell of a plan (for any scheduler: skips a finished cell, resumes an interrupted one)",
		Long: `Runs one cell of a plan: a finished cell is skipped, an interrupted one resumes from its
checkpoint. SIGINT or SIGTERM (Slurm sends SIGTERM before a requeue or at the time limit)
checkpoints the cell and exits with 130 or 143, as dptrain train does; a cell that another
process runs exits with status 75 (running elsewhere).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := sweep.LoadPlan(args[0])
			if err != nil {
				return err
			}
			ctx, received, stop := signalContext(cmd.Context())
			defer stop()
			opts := train.Options{Log: a.log}
			if !noProg {
				opts.Progress = a.errw
			}
			if opts.Comm, err = mpi.World(); err != nil { // a rank of an mpirun/srun job, or alone
				return err
			}
			defer opts.Comm.Close()
			sum, err := sweep.RunCell(ctx, p, index, opts)
			if errors.Is(err, sweep.ErrLocked) {
				return &exitError{status: sweep.ExitLocked, msg: err.Error()}
			}
			if sig := received(); sig != nil && (err != nil || sum != nil && sum.Interrupted) {
				if err != nil {
					return &exitError{status: exitStatus(sig), msg: fmt.Sprintf("%s: %v", sig, err)}
				}
				return &exitError{status: exitStatus(sig), msg: fmt.Sprintf("%s: cell %d interrupted at step %d; a checkpoint was saved in %s. Continue with:\n  %s sweep run-cell %s --index %d",
					sig, index, sum.Steps, rundir.PrivatePath(sum.OutputDir, rundir.CheckpointFile), invoked(cmd), args[0], index)}
			}
			if err != nil || sum == nil { // nil: a rank other than 0 of a data-parallel cell
				return err
			}
			return printSummary(cmd, sum, false)
		},
	}
	cmd.Flags().IntVar(&index, "index", -1, "cell index (the first column of cells.tsv)")
	cmd.Flags().BoolVar(&noProg, "no-progress", false, "do not draw the progress bar")
	return cmd
}

func newSweepCollectCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "collect DIR",
		Short: "Write results.csv, results.json, results.md and plots for a plan, listing cells that did not finish",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := sweep.LoadPlan(args[0])
			if err != nil {
				return err
			}
			r, err := sweep.Collect(p)
			if err != nil {
				return err
			}
			if err := sweep.WriteResults(p.Dir(), r); err != nil {
				return err
			}
			return r.WriteMarkdown(cmd.OutOrStdout())
		},
	}
}

func newSweepEmitCmd(a *app) *cobra.Command {
	var (
		slurm bool
		o     sweep.SlurmOptions
	)
	cmd := &cobra.Command{
		Use:   "emit --slurm DIR",
		Short: "Write an sbatch job array for a plan, a collector job after it, and submit.sh",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slurm {
				return fmt.Errorf("say which scheduler: --slurm (the only one supported)")
			}
			p, err := sweep.LoadPlan(args[0])
			if err != nil {
				return err
			}
			if err := defaultExecutable(&o); err != nil {
				return err
			}
			files, err := sweep.EmitSlurm(p, o)
			if err != nil {
				return err
			}
			for _, f := range files {
				fmt.Fprintln(cmd.OutOrStdout(), f)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "submit with: bash %s\n", files[len(files)-1])
			return nil
		},
	}
	cmd.Flags().BoolVar(&slurm, "slurm", false, "emit a Slurm job array")
	slurmFlags(cmd, &o, "cell")
	return cmd
}

// slurmFlags registers the options of a Slurm job array whose tasks are each one unit (a
// cell, a candidate): sweep emit --slurm and tune --slurm take the same.
func slurmFlags(cmd *cobra.Command, o *sweep.SlurmOptions, unit string) {
	fl := cmd.Flags()
	fl.StringVar(&o.Executable, "executable", "", "absolute path of dptrain on the cluster (default: this binary)")
	fl.IntVar(&o.Concurrent, "concurrent", 0, "at most this many "+unit+"s at once (--array=...%K; 0: no limit)")
	fl.IntVar(&o.CPUsPerTask, "cpus-per-task", 2, "CPUs per "+unit+" (its GOMAXPROCS; OpenBLAS stays on one thread unless OPENBLAS_NUM_THREADS is set)")
	fl.IntVar(&o.Tasks, "ntasks", 1, "ranks per "+unit+": > 1 trains each "+unit+" data-parallel with mpirun (a dptrain built with MPI)")
	fl.StringVar(&o.Time, "time", "", "--time limit per "+unit+", e.g. 04:00:00")
	fl.StringVar(&o.Partition, "partition", "", "Slurm partition")
}

// defaultExecutable makes the jobs call this binary when --executable was not given.
func defaultExecutable(o *sweep.SlurmOptions) error {
	if o.Executable != "" {
		return nil
	}
	exe, err := os.Executable()
	o.Executable = exe
	return err
}
