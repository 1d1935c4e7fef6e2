package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/compare"
	"github.com/dptrain/dptrain/accounting/modes"
)

func init() { subcommands = append(subcommands, newAccountCmd) }

// mechanismFlags describe the released mechanism, the same steps repeated, and how to print
// its guarantee.
type mechanismFlags struct {
	compare.Repeated
	accountant string
	sigma      float64
	json       bool
}

func (f *mechanismFlags) register(cmd *cobra.Command, withSigma bool) {
	fl := cmd.Flags()
	fl.Float64Var(&f.SampleRate, "sample-rate", 0, "sample rate q in (0, 1] (Poisson rate, or batch/dataset size)")
	if withSigma {
		fl.Float64Var(&f.sigma, "noise-multiplier", 0, "noise multiplier σ: noise std over the l2 sensitivity")
	}
	fl.IntVar(&f.Steps, "steps", -1, "number of steps")
	fl.Float64Var(&f.Epochs, "epochs", 0, "epochs, instead of --steps: steps = ceil(epochs/q)")
	fl.Float64Var(&f.Delta, "delta", 1e-5, "δ of the (ε, δ) guarantee, in (0, 1)")
	fl.StringVar(&f.Sampling, "sampling", "poisson", "sampling scheme: poisson, without-replacement, full or poisson-with-rejection")
	fl.IntVar(&f.MinBatchSize, "min-batch-size", 0, "poisson-with-rejection: DP-ULR's rejection threshold N_B (needs --dataset-size)")
	fl.StringVar(&f.Mechanism, "mechanism", string(accounting.Gaussian), "mechanism of every step: gaussian, or sampled-with-rejection-gaussian (DP-ULR's likelihood-ratio noise, labelled paper)")
	fl.IntVar(&f.DatasetSize, "dataset-size", 0, "dataset size n (needed by without-replacement)")
	fl.IntVar(&f.BatchSize, "batch-size", 0, "batch size b (without-replacement; default q·n)")
	fl.Float64Var(&f.MixWidth, "mix-width", 0, "ModelMix: mixing box width over the clip norm, W = L/c")
	fl.IntVar(&f.LinfParts, "linf-parts", 0, "ModelMix: p of the l2+l∞ clipping (0 or 1: l2 only)")
	fl.BoolVar(&f.json, "json", false, "print one JSON object per accountant, one per line")
}

type accountLine struct {
	Accountant string           `json:"accountant"`
	Epsilon    float64          `json:"epsilon"`
	Delta      float64          `json:"delta"`
	Label      accounting.Label `json:"label"`
	Order      float64          `json:"order,omitempty"`
	Steps      int              `json:"steps"`
	SampleRate float64          `json:"sample_rate"`
	Sigma      float64          `json:"noise_multiplier"`
}

func newAccountCmd(a *app) *cobra.Command {
	var f mechanismFlags
	cmd := &cobra.Command{
		Use:   "account",
		Short: "Compute ε for a described run (Gaussian steps, Poisson or full batch)",
		Long: `Compute the (ε, δ) guarantee of T steps of the Gaussian mechanism with noise multiplier σ on
batches sampled with rate q, under one accountant or all composition accountants (rdp, pld, gdp).
Every ε is printed with its label: certified, paper or approximate. With --json, each accountant
prints one JSON object on its own line (JSON Lines, also for --accountant all) with the fields
accountant, epsilon, delta, label, order (RDP-based accountants: the Rényi order used), steps,
sample_rate and noise_multiplier. --epochs E stands for --steps ceil(E/q). Sampling without
replacement (replace-one neighbours) needs --dataset-size and uses q = batch/dataset size.
An accountant that cannot account for the described run prints its reason instead of ε.`,
		Example: `  dptrain account --accountant all --sample-rate 0.004267 --noise-multiplier 1.1 --epochs 60 --delta 1e-5
  dptrain account --accountant ulr --sampling poisson-with-rejection --sample-rate 0.003333 --dataset-size 60000 --min-batch-size 100 --noise-multiplier 4 --epochs 25
  dptrain account --accountant modelmix --sample-rate 0.02 --noise-multiplier 0.4675 --mix-width 3.75 --linf-parts 25 --steps 5000 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !(f.sigma > 0) || math.IsInf(f.sigma, 0) {
				return fmt.Errorf("--noise-multiplier %v must be a positive number", f.sigma)
			}
			s, err := f.Step(f.sigma)
			if err != nil {
				return err
			}
			if w := f.DeltaWarning(); w != "" {
				a.log.Warn(w)
			}
			out := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			if !f.json {
				fmt.Fprintf(tw, "accountant\tε\tδ\tlabel\torder\n")
			}
			outcomes, failed := compare.EpsilonEach(compare.Accountants(f.accountant), f.Run(), s, f.Delta, accountFlagOf)
			var errs []error
			for _, o := range outcomes {
				g := o.Guarantee
				switch {
				case o.Reason != "":
					// Most reasons already start with the accountant's name.
					reason := o.Reason
					if !strings.HasPrefix(reason, o.Mode+": ") {
						reason = o.Mode + ": " + reason
					}
					errs = append(errs, errors.New(reason))
					if !f.json {
						fmt.Fprintf(tw, "%s\tn/a\t%g\t\t(%s)\n", o.Mode, f.Delta, o.Reason)
					}
				case f.json:
					b, _ := json.Marshal(accountLine{o.Mode, g.Epsilon, f.Delta, g.Label, g.Order, s.Count, s.SampleRate, f.sigma})
					fmt.Fprintln(out, string(b))
				default:
					order := ""
					if g.Order > 0 {
						order = fmt.Sprintf("%g", g.Order)
					}
					fmt.Fprintf(tw, "%s\t%.6g\t%g\t%s\t%s\n", o.Mode, g.Epsilon, f.Delta, g.Label, order)
				}
			}
			tw.Flush()
			if failed {
				return errors.Join(errs...)
			}
			for _, e := range errs {
				a.log.Warn(e)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&f.accountant, "accountant", "all", "accountant: "+strings.Join(append([]string{"all"}, modes.Names()...), ", "))
	f.register(cmd, true)
	for _, add := range accountSubcommands {
		cmd.AddCommand(add(a))
	}
	return cmd
}

func init() { accountSubcommands = append(accountSubcommands, newCalibrateCmd) }

func newCalibrateCmd(a *app) *cobra.Command {
	var f mechanismFlags
	var target float64
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Find the smallest noise multiplier that meets a target ε",
		Long: `Find the smallest noise multiplier σ (to a relative tolerance of 1e-4) for which T steps with
sample rate q meet (target ε, δ) under the chosen accountant. The σ printed always meets the
target: the ε it achieves is printed next to it.`,
		Example: `  dptrain account calibrate --accountant rdp --target-epsilon 3 --sample-rate 0.0341 --epochs 40 --delta 1e-5`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !(target > 0) || math.IsInf(target, 0) {
				return fmt.Errorf("--target-epsilon %v must be a positive number", target)
			}
			if f.accountant == "all" {
				return errors.New("calibrate needs one accountant: --accountant rdp, pld or modelmix")
			}
			if _, err := f.Step(1); err != nil {
				return err
			}
			if w := f.DeltaWarning(); w != "" {
				a.log.Warn(w)
			}
			sigma, s, g, err := compare.Calibrate(f.accountant, f.Repeated, target)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if f.json {
				b, _ := json.Marshal(map[string]any{"accountant": f.accountant, "noise_multiplier": sigma, "epsilon": g.Epsilon,
					"target_epsilon": target, "delta": f.Delta, "label": g.Label, "order": g.Order, "steps": s.Count, "sample_rate": s.SampleRate})
				fmt.Fprintln(out, string(b))
				return nil
			}
			fmt.Fprintf(out, "noise multiplier σ = %.6g gives ε = %.6g [%s, %s] at δ = %g over %d steps (q = %g)\n",
				sigma, g.Epsilon, f.accountant, g.Label, f.Delta, s.Count, s.SampleRate)
			return nil
		},
	}
	cmd.Flags().StringVar(&f.accountant, "accountant", "rdp", "accountant: "+strings.Join(modes.Names(), ", "))
	cmd.Flags().Float64Var(&target, "target-epsilon", 0, "target ε")
	f.register(cmd, false)
	return cmd
}
