package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime/pprof"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/dptrain/dptrain/train"
)

func init() { subcommands = append(subcommands, newTrainCmd) }

func newTrainCmd(a *app) *cobra.Command {
	var (
		config string
		sets   []string
		resume bool
		from   string
		allow  bool
		asJSON bool
		noProg bool
		prof   string
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
when a rewind happened. The timing of a run is in private/timing.json (it depends on the
realised batch sizes), not in summary.json.

Ctrl-C (SIGINT) and SIGTERM save a checkpoint and stop with status 130 or 143; continue with
--resume and the run's own config.yaml. An interrupted run's model and summary are kept in
private/ (model-interrupted.dpm, summary-interrupted.json) until the run reaches its planned
end: an intermediate model is a release of its own, which hidden-state accountants do not cover.

A seed makes a run reproducible and NOT private (every noise draw can be regenerated): the
summary says so, nothing is called safe to publish, and the seed is kept in private/seed.yaml,
never in the public config.yaml (a resume reads it from there).`,
		Example: `  dptrain train --config configs/quickstart.yaml
  dptrain train --config configs/fmnist-cnn-dpsgd.yaml --set training.epochs=1 --json
  dptrain train --config runs/quickstart/config.yaml --resume
  dptrain train --config runs/quickstart/config.yaml --resume --allow-changes --set optimizer.learning_rate=0.1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, opts, err := a.loadRun(config, sets, noProg)
			if err != nil {
				return err
			}
			if (from != "" || allow) && !resume {
				return fmt.Errorf("--resume-from and --allow-changes continue a run: add --resume")
			}
			opts.Resume, opts.ResumeFrom, opts.AllowChanges = resume, from, allow
			ctx, received, stop := signalContext(cmd.Context())
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
			if err != nil {
				return err
			}
			if err := printSummary(cmd, sum, asJSON); err != nil {
				return err
			}
			if sig := received(); sig != nil && sum.Interrupted {
				return &exitError{status: exitStatus(sig), msg: fmt.Sprintf("%s: %s; a checkpoint was saved in %s, and the model is kept in private/ until the planned end. Continue with:\n  dptrain train --config %s --resume",
					sig, sum.StoppedEarly, train.PrivatePath(sum.OutputDir, train.CheckpointFile), sum.ConfigFile)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "YAML config file")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a config key: --set optimizer.learning_rate=0.1 (repeatable)")
	cmd.Flags().BoolVar(&resume, "resume", false, "continue from the checkpoint in output.dir (ε continues, never resets)")
	cmd.Flags().StringVar(&from, "resume-from", "", "with --resume: continue from this checkpoint file (e.g. an older private/checkpoint-<step>.dpt of the run) instead of the newest")
	cmd.Flags().BoolVar(&allow, "allow-changes", false, "with --resume: accept changed keys that do not affect privacy accounting (learning rate, schedule, run length); they are logged and listed in summary.json")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	cmd.Flags().BoolVar(&noProg, "no-progress", false, "do not draw the progress bar")
	cmd.Flags().StringVar(&prof, "cpuprofile", "", "write a CPU profile of the training loop to this file (go tool pprof)")
	return cmd
}

// loadRun reads --config with its --set overrides and returns the trainer's options: the
// logger, and the progress bar on stderr unless --no-progress (fitted to the terminal's width).
func (a *app) loadRun(config string, sets []string, noProg bool) (*train.Config, train.Options, error) {
	if config == "" {
		return nil, train.Options{}, fmt.Errorf("--config FILE is required (start from configs/quickstart.yaml)")
	}
	cfg, err := train.LoadConfig(config, sets)
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

func printSummary(cmd *cobra.Command, s *train.Summary, asJSON bool) error {
	out := cmd.OutOrStdout()
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	fmt.Fprintf(out, "%s: %s on %s, %s\n", s.Name, s.Algorithm, s.Dataset, s.Model)
	// σ is printed rounded up: a run configured from the printed value has at least this noise.
	// DP-SGLD clips nothing: its sensitivity is the loss's Lipschitz constant L.
	bound := fmt.Sprintf("C = %g", s.ClipNorm)
	if s.ClipNorm == 0 && s.Lipschitz > 0 {
		bound = fmt.Sprintf("L = %g", s.Lipschitz)
	}
	fmt.Fprintf(out, "test accuracy %.4f (loss %.4f) after %d/%d steps (%.2f epochs, q = %.5g, σ = %s, %s)\n",
		s.TestAccuracy, s.TestLoss, s.Steps, s.PlannedSteps, s.Epochs, s.SampleRate, train.FormatUp(s.NoiseMultiplier, 5), bound)
	if s.StoppedEarly != "" {
		fmt.Fprintln(out, s.StoppedEarly)
	}
	for _, c := range s.ChangedOnResume {
		fmt.Fprintf(out, "changed on resume (--allow-changes): %s\n", c)
	}
	if len(s.Epsilon) > 0 {
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "accountant\tε\tδ\tlabel\n")
		for _, e := range s.Epsilon {
			if e.Error != "" {
				fmt.Fprintf(tw, "%s\tn/a\t%g\t\t(%s)\n", e.Mode, e.Delta, e.Error)
				continue
			}
			fmt.Fprintf(tw, "%s\t%.4f\t%g\t%s\n", e.Mode, e.Epsilon, e.Delta, e.Label)
		}
		if c := s.CertifiedEpsilon; c != nil {
			fmt.Fprintf(tw, "%s\t%.4f\t%g\t%s\t(not in privacy.accountants: the certified ε of the same run, beside the bounds above)\n", c.Mode, c.Epsilon, c.Delta, c.Label)
		}
		tw.Flush()
		if s.TargetBound != "" {
			fmt.Fprintln(out, s.TargetBound)
		}
		fmt.Fprintf(out, "privacy ledger: %d private steps executed on this data (private/%s)\n", s.LedgerSteps, train.LedgerFile)
		if s.Rewind != "" {
			fmt.Fprintf(out, "REWIND: %s\n", s.Rewind)
		}
		fmt.Fprintf(out, "declared public: n = %d training examples\n", s.DatasetSize)
	} else {
		fmt.Fprintln(out, "non-private run: no privacy guarantee")
	}
	if s.NotPrivate != "" {
		fmt.Fprintf(out, "NOT PRIVATE: %s\n", s.NotPrivate)
	}
	perStep := fmt.Sprintf("%.1f ms/step", s.MsPerStep)
	if s.MsPerStep == 0 {
		// A finished run resumed, or a run stopped before its first step: no step to time.
		perStep = "no step ran in this session"
	}
	fmt.Fprintf(out, "%.1f s, %s (blas %s; timing is operator only: private/%s); model: %s\n", s.WallSec, perStep, s.BLAS, train.TimingFile, s.ModelFile)
	switch {
	case len(s.Epsilon) == 0:
	case s.Held != "":
		fmt.Fprintf(out, "NOT YET FOR RELEASE: %s\n", s.Held)
	case s.NotPrivate != "":
		fmt.Fprintf(out, "not for release: the model, summary and config of a seeded run are not private (the seed is in %s)\n", train.PrivatePath(s.OutputDir, train.SeedFile))
	default:
		fmt.Fprintln(out, train.PublishLine(s.OutputDir))
	}
	return nil
}
