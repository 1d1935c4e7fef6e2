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
With seed in the space file the search is reproducible and NOT private.`,
		Example: `  dptrain tune --config configs/quickstart.yaml --space configs/tune/quickstart-space.yaml --out runs/tune --workers 2`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if req.Config == "" || req.Space == "" || req.Out == "" {
				return errors.New("--config BASE, --space SPACE.yaml and --out DIR are required (configs/tune/quickstart-space.yaml is a space file to start from)")
			}
			if workers < 1 {
				return fmt.Errorf("--workers %d: want at least 1", workers)
			}
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			ctx, received, stop := signalContext(cmd.Context())
			defer stop()
			req.Log = a.log
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
				return &exitError{status: exitStatus(sig), msg: fmt.Sprintf("%s: search interrupted; the running candidates were asked to checkpoint. Continue with:\n  %s tune --config %s --space %s --out %s --workers %d",
					sig, invoked(cmd), req.Config, req.Space, req.Out, workers)}
			}
			if sum == nil {
				return err
			}
			if asJSON {
				if werr := writeJSON(cmd.OutOrStdout(), sum); werr != nil {
					return werr
				}
				return err
			}
			printSearch(cmd, sum, req.Out)
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&req.Config, "config", "", "base config: every candidate starts from it (dp-sgd, poisson sampling)")
	fl.StringVar(&req.Space, "space", "", "space file: target ε and δ, the law of K, validation, parameters")
	fl.StringVar(&req.Out, "out", "", "search directory (release/, summary.json, private/)")
	fl.IntVar(&workers, "workers", 1, "candidates trained at once")
	fl.BoolVar(&asJSON, "json", false, "print DIR/summary.json")
	return cmd
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
