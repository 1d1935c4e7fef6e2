package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/sweep"
	"github.com/dptrain/dptrain/cmd/dptrain/internal/sweepline"
	"github.com/dptrain/dptrain/cmd/dptrain/internal/tune"
)

func init() { subcommands = append(subcommands, newTuneCmd) }

func newTuneCmd(a *app) *cobra.Command {
	var (
		req     tune.Request
		workers int
		asJSON  bool
		slurm   bool
		o       sweep.SlurmOptions
	)
	cmd := &cobra.Command{
		Use:   "tune --config BASE --space SPACE.yaml --out DIR",
		Short: "A private hyperparameter search: K random candidates, the best released, one certified ε for all",
		Long: `Runs a private hyperparameter search (Papernot & Steinke, "Hyperparameter Tuning with Renyi
Differential Privacy", ICLR 2022). The space file gives the whole search's target ε and δ, the law
of the number K of candidates (poisson, or truncated negative binomial), the validation fraction
and the hyperparameters. K is drawn with crypto/rand; each candidate draws its hyperparameters
independently from the space, trains (DP-SGD) on the training split minus the held-out validation
examples with σ calibrated so that the whole search meets the target, and is scored by a noisy
count of its correct validation predictions. Only the best candidate is released: DIR/release/
(model.dpm, config.yaml, summary.json) and DIR/summary.json with the search's certified ε.
DIR/private/ holds K, every candidate and their scores: never publish it.

The candidates are the cells of a sweep plan in DIR/private/sweep, run --workers at a time.
Ctrl-C checkpoints the running candidates; the same command continues the search (K and the
candidates are never drawn again). A candidate that fails is counted and never run again.
With seed in the space file the search is reproducible and NOT private.

With --slurm the search is drawn as without it, the candidates are written as a Slurm job array
(DIR/private/sweep/slurm, the sweep's emitter: --executable, --cpus-per-task, --concurrent,
--ntasks, --time, --partition as for sweep emit --slurm) and the command exits, training
nothing; it prints the submit command. When the array has ended, the same command without
--slurm scores the candidates that finished, releases the best and prints the search's ε; it
trains no candidate here: while some have neither finished nor failed it says so and stops
(wait for the array, or run the command with --slurm again, which writes the array for the
unfinished candidates alone, and submit that).`,
		Example: `  dptrain tune --config configs/quickstart.yaml --space configs/tune/quickstart-space.yaml --out runs/tune --workers 2
  dptrain tune --config configs/quickstart.yaml --space configs/tune/quickstart-space.yaml --out runs/tune --slurm --cpus-per-task 4
  bash runs/tune/private/sweep/slurm/submit.sh --wait
  dptrain tune --config configs/quickstart.yaml --space configs/tune/quickstart-space.yaml --out runs/tune`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if req.Config == "" || req.Space == "" || req.Out == "" {
				return errors.New("--config BASE, --space SPACE.yaml and --out DIR are required (configs/tune/quickstart-space.yaml is a space file to start from)")
			}
			if workers < 1 {
				return fmt.Errorf("--workers %d: want at least 1", workers)
			}
			ctx, received, stop := signalContext(cmd.Context())
			defer stop()
			req.Log = a.log
			again := fmt.Sprintf("%s tune --config %s --space %s --out %s", invoked(cmd), req.Config, req.Space, req.Out)
			if slurm {
				if cmd.Flags().Changed("workers") {
					return errors.New("--workers sets how many candidates train at once on this machine; with --slurm the cluster runs them: give --concurrent")
				}
				if err := defaultExecutable(&o); err != nil {
					return err
				}
				files, sum, err := tune.Submit(ctx, req, o)
				if sig := received(); sig != nil {
					return &exitError{status: exitStatus(sig), msg: fmt.Sprintf("%s: interrupted; nothing was submitted (the search, once drawn, is kept). Run the same command again:\n  %s --slurm", sig, again)}
				}
				if err != nil && sum == nil {
					return err
				}
				if sum == nil {
					w := cmd.OutOrStdout()
					fmt.Fprintf(w, "the candidates are a Slurm job array in %s (the operator's only, like the rest of %s)\n", filepath.Dir(files[len(files)-1]), filepath.Join(req.Out, tune.PrivateDir))
					fmt.Fprintf(w, "submit with: bash %s\n", files[len(files)-1])
					fmt.Fprintf(w, "when it has ended, score the candidates, release the best and print the search's ε with:\n  %s\n", again)
					return nil
				}
				fmt.Fprintln(cmd.OutOrStdout(), "nothing to submit: no candidate is left to run; the search is finished")
				return reportSearch(cmd, sum, req.Out, asJSON, err)
			}
			for _, f := range []string{"executable", "concurrent", "cpus-per-task", "ntasks", "time", "partition"} {
				if cmd.Flags().Changed(f) {
					return fmt.Errorf("--%s shapes the Slurm job array: give it with --slurm", f)
				}
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			req.RunCells = func(ctx context.Context, p *sweep.Plan) error {
				_, err := sweep.Local{
					Workers: workers,
					Worker:  sweep.SelfWorker(exe, a.logLevel, p.Dir()),
					OnCell:  func(ev sweep.CellEvent) { a.log.Info(sweepline.Cell(ev)) },
				}.Run(ctx, p)
				return err
			}
			sum, err := tune.Run(ctx, req)
			if sig := received(); sig != nil {
				return &exitError{status: exitStatus(sig), msg: fmt.Sprintf("%s: search interrupted; the running candidates were asked to checkpoint. Continue with:\n  %s --workers %d",
					sig, again, workers)}
			}
			if sum == nil {
				return err
			}
			return reportSearch(cmd, sum, req.Out, asJSON, err)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&req.Config, "config", "", "base config: every candidate starts from it (dp-sgd, poisson sampling)")
	fl.StringVar(&req.Space, "space", "", "space file: target ε and δ, the law of K, validation, parameters")
	fl.StringVar(&req.Out, "out", "", "search directory (release/, summary.json, private/)")
	fl.IntVar(&workers, "workers", 1, "candidates trained at once")
	fl.BoolVar(&asJSON, "json", false, "print DIR/summary.json")
	fl.BoolVar(&slurm, "slurm", false, "write the candidates as a Slurm job array, print how to submit it and exit without training (then run the command without --slurm)")
	slurmFlags(cmd, &o, "candidate")
	return cmd
}

// reportSearch prints the search's summary (as JSON with asJSON) and returns err, the search's
// own error beside its summary.
func reportSearch(cmd *cobra.Command, sum *tune.Summary, out string, asJSON bool, err error) error {
	if asJSON {
		if werr := writeJSON(cmd.OutOrStdout(), sum); werr != nil {
			return werr
		}
		return err
	}
	printSearch(cmd, sum, out)
	return err
}

// printSearch prints the search's summary: the all-in ε first.
func printSearch(cmd *cobra.Command, s *tune.Summary, out string) {
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "search: ε = %.6g [%s, %s] at δ = %g (target %g), all candidates and scores included\n", s.Epsilon, s.Accountant, s.Label, s.Delta, s.TargetEpsilon)
	fmt.Fprintf(w, "one candidate: ε = %.4g; K ~ %s, E[K] = %.4g; validation: %d examples, score noise σ_s = %.4g\n", s.CandidateEpsilon, s.Candidates, s.MeanCandidates, s.Validation.Examples, s.Validation.Noise)
	if s.NotPrivate != "" {
		fmt.Fprintf(w, "NOT PRIVATE: %s\n", s.NotPrivate)
	}
	if r := s.Released; r != nil {
		fmt.Fprintf(w, "released: %s (σ = %.4g): noisy validation accuracy %.4f, test accuracy %.4f\n", strings.Join(r.Hyperparameters, " "), r.NoiseMultiplier, r.ValidationAccuracy, r.TestAccuracy)
		fmt.Fprintf(w, "publish %s and %s; %s is the operator's only\n", r.Dir, filepath.Join(out, tune.SummaryFile), filepath.Join(out, tune.PrivateDir))
	} else {
		fmt.Fprintf(w, "released: nothing (%s)\n", s.Unreleased)
	}
}
