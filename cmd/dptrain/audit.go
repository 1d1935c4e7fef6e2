package main

import (
	"encoding/json"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	bound "github.com/dptrain/dptrain/accounting/audit"
	"github.com/dptrain/dptrain/cmd/dptrain/internal/auditreport"
	"github.com/dptrain/dptrain/cmd/dptrain/internal/plot"
	"github.com/dptrain/dptrain/train/audit"
)

func init() { subcommands = append(subcommands, newAuditCmd) }

// AuditFile is the audit report written into the run's output directory.
const AuditFile = auditreport.File

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
			auditreport.Isolate(cfg, sets) // an audit is a run of its own (with canaries)
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
			if err := auditreport.Save(cfg.Output.Dir, rep); err != nil {
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
			return auditreport.WriteText(cmd.OutOrStdout(), rep)
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
