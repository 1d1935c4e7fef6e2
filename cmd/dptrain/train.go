package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/dptrain/dptrain/internal/mpi"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/config"
	"github.com/dptrain/dptrain/train/rundir"
)

func init() { subcommands = append(subcommands, newTrainCmd) }

func newTrainCmd(a *app) *cobra.Command {
	var (
		configFile string
		sets       []string
		resume     bool
		from       string
		allow      bool
		asJSON     bool
		noProg     bool
		prof       string
	)
	cmd := &cobra.Command{
		Use:   "train",
		Short: "Train a model privately from a YAML config, with ε reported after every step",
		Long: `Train a model from a YAML config (see configs/quickstart.yaml for every key). The live
accountants listed in privacy.accountants report ε after every step in the progress bar and in
private/metrics.jsonl / private/metrics.csv; training stops before the step that would exceed
privacy.target_epsilon. The output directory receives the public artefacts at its top:
model.dpm (the final model), summary.json (ε per mode, the test evaluation) and config.yaml.
Its private/ directory holds the operator's files, which the guarantee does not cover and which
must not be published (private/README.txt says so): the metrics (loss and accuracy on private
batches, the realised batch size) and the checkpoints, checkpoint.dpt (atomic, every
training.checkpoint_every steps; the last training.keep_checkpoints are kept as
checkpoint-<step>.dpt). A run directory written by a dptrain before private/ existed is
refused until its checkpoints and metrics are moved into private/.

The progress line fits the terminal: on a narrow one it drops the bar, the epoch and the
accuracies first and abbreviates the labels (c = certified, p = paper, ~ = approximate); ε of
every accountant is always shown, the last value computed until the next.

Every private step is appended to private/ledger.jsonl, the run's privacy ledger, which only
grows: a resume, from the newest checkpoint or an older one (--resume-from), composes all of
it, so ε counts every step ever executed on the data, on every branch, and the summary says
when a rewind happened. Its lines are chained by hash and each checkpoint records its length
and head: a ledger deleted, cut short or edited stops the resume (restore it from a backup). The timing of a run is in private/timing.json (it depends on the
realised batch sizes), not in summary.json.

Ctrl-C (SIGINT) and SIGTERM save a checkpoint and stop with status 130 or 143; continue with
--resume and the run's own config.yaml. An interrupted run's model and summary are kept in
private/ (model-interrupted.dpm, summary-interrupted.json) until the run reaches its planned
end: an intermediate model is a release of its own, which hidden-state accountants do not cover.

A seed makes a run reproducible and NOT private (every noise draw can be regenerated): the
summary says so, nothing is called safe to publish, and the seed is kept in private/seed.yaml,
never in the public config.yaml (a resume reads it from there).

Started by mpirun or srun with several tasks (a dptrain built with MPI: make build detects
Debian's libopenmpi-dev), the processes train one model data-parallel: each clips its share of
every batch, the shares are summed, and the same noise is added once; rank 0 writes the run
directory and reports, and ε is the single-process ε (docs/distributed.md).`,
		Example: `  dptrain train --config configs/quickstart.yaml
  dptrain train --config configs/fmnist-cnn-dpsgd.yaml --set training.epochs=1 --json
  dptrain train --config runs/quickstart/config.yaml --resume
  dptrain train --config runs/quickstart/config.yaml --resume --allow-changes --set optimizer.learning_rate=0.1
  mpirun -np 4 dptrain train --config configs/fmnist-cnn-dpsgd.yaml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, opts, err := a.loadRun(configFile, sets, noProg)
			if err != nil {
				return err
			}
			if (from != "" || allow) && !resume {
				return fmt.Errorf("--resume-from and --allow-changes continue a run: add --resume")
			}
			opts.Resume, opts.ResumeFrom, opts.AllowChanges = resume, from, allow
			comm, err := mpi.World() // a rank of an mpirun/srun job, or alone
			if err != nil {
				return err
			}
			opts.Comm = comm
			l := launchOf(thisProcess(), invoked(cmd), comm.Size())
			err = runTraining(cmd, cfg, opts, l, prof, asJSON)
			if comm.Size() > 1 {
				err = beforeFinalize(cmd, comm.Rank(), err)
			}
			comm.Close()
			return err
		},
	}
	cmd.Flags().StringVar(&configFile, "config", "", "YAML config file")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a config key: --set optimizer.learning_rate=0.1 (repeatable)")
	cmd.Flags().BoolVar(&resume, "resume", false, "continue from the checkpoint in output.dir (ε continues, never resets)")
	cmd.Flags().StringVar(&from, "resume-from", "", "with --resume: continue from this checkpoint file (e.g. an older private/checkpoint-<step>.dpt of the run) instead of the newest")
	cmd.Flags().BoolVar(&allow, "allow-changes", false, "with --resume: accept changed keys that do not affect privacy accounting (learning rate, schedule, run length); they are logged and listed in summary.json")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	cmd.Flags().BoolVar(&noProg, "no-progress", false, "do not draw the progress bar")
	cmd.Flags().StringVar(&prof, "cpuprofile", "", "write a CPU profile of the training loop to this file (go tool pprof)")
	return cmd
}

// runTraining trains one run, as a single process or as one rank of a data-parallel job, and
// prints its summary (rank 0). Stopped by a signal, it returns an *exitError whose message
// gives the command (started as l) that continues the run.
func runTraining(cmd *cobra.Command, cfg *config.Config, opts train.Options, l launch, prof string, asJSON bool) error {
	var (
		first    func(os.Signal)
		followed atomic.Bool // rank 1: rank 0's decision to stop has arrived
	)
	switch rank := opts.Comm.Rank(); {
	case opts.Comm.Size() == 1:
	case rank == 0:
		first = func(s os.Signal) { fmt.Fprintln(cmd.ErrOrStderr(), "dptrain:", jobStopping(s, cfg.Output.Dir, l)) }
	case rank == 1:
		// Rank 0 reports for the run, unless it is the rank that failed: then rank 1 speaks,
		// when rank 0's decision to stop does not come.
		first = func(s os.Signal) {
			time.AfterFunc(rankZeroSilence, func() {
				if !followed.Load() {
					fmt.Fprintf(cmd.ErrOrStderr(), "dptrain: rank 1: %s\n", rankZeroSilent(s, cfg.Output.Dir, l))
				}
			})
		}
	}
	ctx, received, stop := signalContextNotify(cmd.Context(), first)
	defer stop()
	t, err := train.New(ctx, cfg, opts)
	if err != nil {
		if sig := received(); sig != nil {
			var ie *train.InterruptedError
			if errors.As(err, &ie) {
				return &exitError{status: exitStatus(sig), msg: fmt.Sprintf("%s: %v: run the same command again", sig, err)}
			}
			return &exitError{status: exitStatus(sig), msg: fmt.Sprintf("%s while preparing the run (%v): training had not started, so no privacy was spent and there is nothing new to resume; run the same command again", sig, err)}
		}
		return err
	}
	if prof != "" {
		f, err := os.Create(prof)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	sum, err := t.Run(ctx)
	followed.Store(true)
	var ce *train.CheckpointError
	if errors.As(err, &ce) {
		ce.Resume = l.resumeCommand(ce.Config)
	}
	if err != nil {
		return err
	}
	if sum == nil { // a rank other than 0 of a data-parallel run: rank 0 reports
		if sig := received(); sig != nil {
			return &exitError{status: exitStatus(sig), msg: fmt.Sprintf("%s: stopped with rank 0, which saved the checkpoint", sig)}
		}
		return nil
	}
	if err := printSummary(cmd, sum, asJSON); err != nil {
		return err
	}
	if sig := received(); sig != nil && sum.Interrupted {
		return &exitError{status: exitStatus(sig), msg: fmt.Sprintf("%s: %s; a checkpoint was saved in %s, and the model is kept in private/ until the planned end. Continue with:\n  %s",
			sig, sum.StoppedEarly, rundir.PrivatePath(sum.OutputDir, rundir.CheckpointFile), l.resumeCommand(sum.ConfigFile))}
	}
	return nil
}

// jobStopping is what rank 0 of a data-parallel job prints as soon as a stop signal arrives:
// mpirun sends SIGTERM to every rank on Ctrl-C and when a rank fails, and kills them all
// (SIGKILL) a moment later, possibly before rank 0 has saved its checkpoint and said more. The
// line says how to continue from the last checkpoint saved, which a kill leaves intact.
func jobStopping(s os.Signal, dir string, l launch) string {
	ck := rundir.PrivatePath(dir, rundir.CheckpointFile)
	if _, err := os.Stat(ck); err != nil {
		return fmt.Sprintf("%s: the job is stopping (mpirun stops every rank on Ctrl-C and when a rank fails: its message says which); no checkpoint was saved yet, so if the job ends before rank 0 saves one, start the run again with the same command", s)
	}
	return fmt.Sprintf("%s: the job is stopping (mpirun stops every rank on Ctrl-C and when a rank fails: its message says which); rank 0 saves a checkpoint if it has the time. If nothing follows, the last checkpoint saved (%s) is intact. Continue with:\n  %s",
		s, ck, l.resumeCommand(filepath.Join(dir, rundir.ConfigFile)))
}

// rankZeroSilence is how long rank 1 waits, after a stop signal, for rank 0's decision to stop
// before it says how to continue (mpirun kills the ranks 1 s after its SIGTERM by default).
var rankZeroSilence = 300 * time.Millisecond

// rankZeroSilent is what rank 1 prints when rank 0 has not stopped the run within
// rankZeroSilence of a stop signal: rank 0 failed (mpirun's message says so), or it is still
// finishing a long step.
func rankZeroSilent(s os.Signal, dir string, l launch) string {
	return fmt.Sprintf("%s, and rank 0 has not stopped the run within %v: if mpirun says rank 0 failed, its last checkpoint (%s on rank 0's node) is intact. Continue with:\n  %s",
		s, rankZeroSilence, rundir.PrivatePath(dir, rundir.CheckpointFile), l.resumeCommand(filepath.Join(dir, rundir.ConfigFile)))
}

// beforeFinalize prints the error of a rank of a data-parallel job (rank 0's, or another
// rank's own failure) before the rank finalizes MPI: stopping a job, mpirun sends its ranks
// SIGTERM and kills them a moment later (odls_base_sigkill_timeout, 1 s by default), and
// MPI_Finalize does not return while it does, so an error printed after it is never seen. The
// error returned is marked as printed, for main.
func beforeFinalize(cmd *cobra.Command, rank int, err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if rank != 0 && errors.As(err, &ee) {
		return &printedError{err} // a signal: rank 0 says what happened and how to continue
	}
	if rank != 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "dptrain: rank %d: %v\n", rank, err)
	} else {
		fmt.Fprintln(cmd.ErrOrStderr(), "dptrain:", err)
	}
	return &printedError{err}
}

// loadRun reads --config with its --set overrides and returns the trainer's options: the
// logger, and the progress bar on stderr unless --no-progress (fitted to the terminal's width).
func (a *app) loadRun(configFile string, sets []string, noProg bool) (*config.Config, train.Options, error) {
	if configFile == "" {
		return nil, train.Options{}, fmt.Errorf("--config FILE is required (start from configs/quickstart.yaml)")
	}
	cfg, err := config.LoadConfig(configFile, sets)
	if err != nil {
		return nil, train.Options{}, err
	}
	opts := train.Options{Log: a.log}
	if !noProg {
		opts.Progress = a.errw
		if f, ok := a.errw.(*os.File); ok {
			opts.Terminal = term.IsTerminal(int(f.Fd()))
			if opts.Terminal {
				opts.ProgressWidth = func() int { // asked at every redraw: resizes are followed
					w, _, err := term.GetSize(int(f.Fd()))
					if err != nil {
						return 0
					}
					return w
				}
			}
		}
	}
	return cfg, opts, nil
}

// printSummary prints the run's summary: as JSON, or as text (see writeSummaryText).
func printSummary(cmd *cobra.Command, s *train.Summary, asJSON bool) error {
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), s)
	}
	return writeSummaryText(cmd.OutOrStdout(), s)
}
