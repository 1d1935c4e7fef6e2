package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	bound "github.com/dptrain/dptrain/accounting/audit"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/plot"
	"github.com/dptrain/dptrain/train"
	"github.com/dptrain/dptrain/train/audit"
)

func init() { subcommands = append(subcommands, newAuditCmd) }

// AuditFile is the audit report written into the run's output directory.
const AuditFile = "audit.json"

func newAuditCmd(a *app) *cobra.Command {
	var (
		config, threat, plotFile string
		sets                     []string
		canaries                 int
		confidence               float64
		support, guesses         int
		asJSON, noProg           bool
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Measure an empirical lower bound on ε for a run and hold every accountant to it",
		Long: `Train the config once with m canaries, each included with probability 1/2, score how
well each canary can be detected, and turn the correct guesses into a lower bound on ε at the
stated confidence (Steinke, Nasr & Jagielski, NeurIPS 2023). Every accountant of the run is
printed next to it; one whose ε is below ε_lower is REFUTED: the run is not (ε, δ)-DP at that
confidence, so the bound or the implementation is wrong. An audit can refute, never certify.

--threat all-iterates (white-box, what composition accountants cover): gradient canaries on the
coordinates the data uses least, injected into the clipped gradient sum and noised with it;
needs optimizer.sampling poisson. --threat final-model (black-box, what hidden-state accountants
cover): out-of-distribution, mislabelled input canaries added to the training data, scored by
the final model's loss. The default follows privacy.release.`,
		Example: `  dptrain audit --config configs/quickstart.yaml --canaries 1000 --threat all-iterates
  dptrain audit --config configs/fmnist-logreg-dpsgld.yaml --threat final-model --json --plot audit.png`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, opts, err := a.loadRun(config, sets, noProg)
			if err != nil {
				return err
			}
			if !slices.ContainsFunc(sets, func(s string) bool { return strings.HasPrefix(s, "output.dir=") }) {
				// An audit is a run of its own (with canaries): never the config's training run.
				cfg.Output.Dir += "-audit"
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
			defer stop()
			o := audit.Options{Canaries: canaries, Threat: audit.Threat(threat), Confidence: confidence, Support: support}
			if guesses > 0 {
				o.Counts = []bound.Guesses{{Plus: guesses, Minus: guesses}}
			}
			rep, err := audit.Run(ctx, cfg, o, opts)
			if err != nil {
				return err
			}
			if err := data.WriteFileAtomic(filepath.Join(cfg.Output.Dir, AuditFile), func(w io.Writer) error { return writeJSON(w, rep) }); err != nil {
				return err
			}
			if plotFile != "" {
				if err := plot.Audit(plotFile, rep); err != nil {
					return err
				}
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			return printAudit(cmd.OutOrStdout(), rep)
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "YAML config file")
	cmd.Flags().StringArrayVar(&sets, "set", nil, "override a config key: --set training.epochs=1 (repeatable)")
	cmd.Flags().IntVar(&canaries, "canaries", 1000, "m: canaries, each included with probability 1/2")
	cmd.Flags().StringVar(&threat, "threat", "", "all-iterates (white-box, gradient canaries) or final-model (black-box, input canaries); default from privacy.release")
	cmd.Flags().IntVar(&support, "canary-support", 1, "coordinates per gradient canary (all-iterates); at least optimizer.modelmix.linf_parts when that is > 1")
	cmd.Flags().IntVar(&guesses, "guesses", 0, "guess k₊ = k₋ = K (fixed in advance, no Bonferroni split); 0: try 1, 2, 5, 10, 20 and 50% of m")
	cmd.Flags().Float64Var(&confidence, "confidence", 0.95, "confidence of the lower bound")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringVar(&plotFile, "plot", "", "write a PNG: ε per accountant as bars, ε_lower as a line")
	cmd.Flags().BoolVar(&noProg, "no-progress", false, "do not draw the progress bar")
	return cmd
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printAudit(out io.Writer, r *audit.Report) error {
	s := r.Summary
	fmt.Fprintf(out, "%s: %s on %s, %s; %d/%d steps, q = %.5g, σ = %s, C = %g, test accuracy %.4f\n",
		s.Name, s.Algorithm, s.Dataset, s.Model, s.Steps, s.PlannedSteps, s.SampleRate, train.FormatUp(s.NoiseMultiplier, 5), s.ClipNorm, s.TestAccuracy)
	b := r.Bound
	fmt.Fprintf(out, "audit (%s, %s neighbours): %d canaries, %d included", r.Threat, r.Adjacency, r.Canaries, r.Included)
	if r.Support > 0 {
		fmt.Fprintf(out, ", gradient canaries on %d coordinate(s) each", r.Support)
	}
	fmt.Fprintf(out, "\nε_lower = %.4f at %g%% confidence (δ = %g): %d of %d guesses correct (k₊ = %d, k₋ = %d; confidence split over %d guess counts)\n",
		b.Epsilon, 100*b.Confidence, b.Delta, b.Best.Correct, b.Best.Made(), b.Best.Plus, b.Best.Minus, b.Bonferroni)
	if len(r.Modes) == 0 {
		fmt.Fprintln(out, "non-private run: no accountant to hold to the bound")
	} else {
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "accountant\tε\tlabel\tverdict\n")
		for _, v := range r.Modes {
			if v.Error != "" {
				fmt.Fprintf(tw, "%s\tn/a\t\t%s (%s)\n", v.Mode, v.Verdict, v.Error)
				continue
			}
			fmt.Fprintf(tw, "%s\t%.4f\t%s\t%s\n", v.Mode, v.Epsilon, v.Label, v.Verdict)
		}
		tw.Flush()
	}
	fmt.Fprintln(out, "an audit can only refute a bound, never certify one")
	if s.Reproducible {
		fmt.Fprintln(out, "WARNING: a seed was set; the canaries and the noise are reproducible: this run is not for release")
	}
	fmt.Fprintf(out, "%.1f s; report: %s; the run's checkpoints and metrics (operator only, not covered by the guarantee): %s\n",
		s.WallSec, filepath.Join(s.OutputDir, AuditFile), train.PrivatePath(s.OutputDir)+string(filepath.Separator))
	return nil
}
