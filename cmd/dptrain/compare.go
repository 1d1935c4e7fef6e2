package main

import (
	"io"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/compare"
	"github.com/dptrain/dptrain/cmd/dptrain/internal/plot"
	"github.com/spf13/cobra"
)

func init() { accountSubcommands = append(accountSubcommands, newAccountCompareCmd) }

// compareOptions are the flags of "dptrain account compare": the described run, and where
// and how to print it.
type compareOptions struct {
	compare.Described
	config, plotFile, plotTitle string
	json                        bool
}

func newAccountCompareCmd(a *app) *cobra.Command {
	o := &compareOptions{}
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Run every accounting mode whose assumptions hold on one mechanism and compare ε",
		Long: `compare describes one training run by its mechanism (explicit flags, or --config FILE for a
training config, flags overriding it), builds every accounting mode, composes the run's steps in
each mode whose assumptions hold, and prints ε per mode at the final step and at --at steps. Modes
whose assumptions fail are listed with the reason. "best" is the smallest ε over applicable
certified modes.

Step records follow accounting.Step: the noise multiplier is the noise std on the summed
gradient divided by the clip norm; hidden-state modes need --last-iterate-only, --update-rule sgd
and --neighbouring replace-one, and their loss constants (--lipschitz, --smoothness,
--strong-convexity, --diameter, --convexity).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.config != "" {
				if err := describeFromConfig(o.config, &o.Described, cmd.Flags().Changed); err != nil {
					return err
				}
			}
			if w := compare.DeltaWarning(o.Delta, o.DatasetSize, o.BatchSize, o.SampleRate); w != "" {
				a.log.Warn(w)
			}
			return runCompare(a.out, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.config, "config", "", "training config (YAML) to read the mechanism from; explicit flags override it")
	f.StringVar(&o.Mechanism, "mechanism", string(accounting.Gaussian), "mechanism of every step: gaussian or sampled-with-rejection-gaussian")
	f.StringVar(&o.Sampling, "sampling", string(accounting.Poisson), "sampling: poisson, without-replacement, shuffled, shuffled-once, full, poisson-with-rejection")
	f.StringVar(&o.Neighbouring, "neighbouring", string(accounting.AddRemove), "neighbouring relation: add-remove or replace-one")
	f.Float64Var(&o.SampleRate, "sample-rate", 0, "sample rate q (default batch-size/dataset-size; 1 for full batch)")
	f.Float64Var(&o.NoiseMultiplier, "noise-multiplier", 0, "noise multiplier z: noise std on the summed gradient / clip norm")
	f.Float64Var(&o.ClipNorm, "clip-norm", 0, "per-example clip norm C (default --lipschitz, else 1)")
	f.IntVar(&o.Steps, "steps", 0, "number of steps K")
	f.Float64Var(&o.Delta, "delta", 1e-5, "δ")
	f.IntVar(&o.DatasetSize, "dataset-size", 0, "dataset size n")
	f.IntVar(&o.BatchSize, "batch-size", 0, "batch size b (expected size under Poisson)")
	f.Float64Var(&o.StepSize, "step-size", 0, "step size η (constant)")
	f.Float64Var(&o.Lipschitz, "lipschitz", 0, "Lipschitz constant L of the per-example loss (gradient-norm bound)")
	f.Float64Var(&o.Smoothness, "smoothness", 0, "smoothness β (Hölder constant if --holder-exponent < 1)")
	f.Float64Var(&o.StrongConvexity, "strong-convexity", 0, "strong convexity λ")
	f.Float64Var(&o.Holder, "holder-exponent", 0, "Hölder exponent of the gradient in (0, 1]; 1 or 0 means smooth")
	f.Float64Var(&o.Diameter, "diameter", 0, "diameter of the projection domain (0: no projection)")
	f.StringVar(&o.Convexity, "convexity", string(accounting.NonConvex), "loss class: non-convex, convex, strongly-convex")
	f.StringVar(&o.UpdateRule, "update-rule", "sgd", "update rule: sgd, momentum, adam")
	f.BoolVar(&o.LastIterateOnly, "last-iterate-only", false, "only the final model is released (hidden-state modes need it)")
	f.IntVar(&o.MinBatchSize, "min-batch-size", 0, "DP-ULR's rejection threshold N_B")
	f.Float64Var(&o.MixWidth, "mix-width", 0, "ModelMix's mixing width, in the units of the noise std")
	f.IntVar(&o.LinfParts, "linf-parts", 0, "ModelMix's l2+l∞ clipping parts p")
	f.Float64Var(&o.ProxLipschitz, "prox-lipschitz", 0, "DP-MBCD: Lipschitz constant L_T of the prox (0: 1)")
	f.Float64Var(&o.GradientLipschitz, "gradient-lipschitz", 0, "DP-MBCD (paper mode): L_F of every step's gradient map (0: from --smoothness)")
	f.Float64Var(&o.InitialLSIInverse, "initial-lsi-inverse", 0, "DP-MBCD: 1/c_0 of the initialisation (0: data-independent point mass; s0² for N(0, s0²I))")
	f.IntVar(&o.Block, "block", 0, "DP-MBCD block index of every step (with --blocks: of the first block)")
	f.IntVar(&o.Blocks, "blocks", 1, "DP-MBCD schedule: number of blocks updated in turn")
	f.IntVar(&o.BlockEpochs, "block-epochs", 1, "DP-MBCD schedule: epochs (n/b steps) spent on a block before moving to the next")
	f.IntSliceVar(&o.At, "at", nil, "also report ε after these steps (comma separated)")
	f.StringVar(&o.plotFile, "plot", "", "write a PNG of ε against steps, one curve per applicable mode")
	f.IntVar(&o.PlotPoints, "plot-points", 60, "number of steps at which the plot evaluates ε")
	f.StringVar(&o.plotTitle, "plot-title", "", "title of the --plot figure (default: ε (δ = …) against steps)")
	f.BoolVar(&o.json, "json", false, "print one JSON object instead of a table")
	return cmd
}

func runCompare(w io.Writer, o *compareOptions) error {
	o.Plot = o.plotFile != ""
	report, err := o.Evaluate(nil, nil, flagOf)
	if err != nil {
		return err
	}
	if o.plotFile != "" {
		if err := plot.Compare(o.plotFile, o.plotTitle, report); err != nil {
			return err
		}
	}
	if o.json {
		return writeJSON(w, report)
	}
	return report.WriteTable(w, o.At)
}
