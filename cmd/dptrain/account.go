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

// compositionModes are what --accountant all runs: the accountants of standard composition.
var compositionModes = []string{"rdp", "pld", "gdp"}

// mechanismFlags describe the released mechanism: the same steps repeated.
type mechanismFlags struct {
	accountant                string
	sampleRate, sigma, delta  float64
	epochs                    float64
	steps, datasetSize, batch int
	sampling, mechanism       string
	minBatchSize              int
	mixWidth                  float64
	linfParts                 int
	json                      bool
}

func (f *mechanismFlags) register(cmd *cobra.Command, withSigma bool) {
	fl := cmd.Flags()
	fl.Float64Var(&f.sampleRate, "sample-rate", 0, "sample rate q in (0, 1] (Poisson rate, or batch/dataset size)")
	if withSigma {
		fl.Float64Var(&f.sigma, "noise-multiplier", 0, "noise multiplier σ: noise std over the l2 sensitivity")
	}
	fl.IntVar(&f.steps, "steps", -1, "number of steps")
	fl.Float64Var(&f.epochs, "epochs", 0, "epochs, instead of --steps: steps = ceil(epochs/q)")
	fl.Float64Var(&f.delta, "delta", 1e-5, "δ of the (ε, δ) guarantee, in (0, 1)")
	fl.StringVar(&f.sampling, "sampling", "poisson", "sampling scheme: poisson, without-replacement, full or poisson-with-rejection")
	fl.IntVar(&f.minBatchSize, "min-batch-size", 0, "poisson-with-rejection: DP-ULR's rejection threshold N_B (needs --dataset-size)")
	fl.StringVar(&f.mechanism, "mechanism", string(accounting.Gaussian), "mechanism of every step: gaussian, or sampled-with-rejection-gaussian (DP-ULR's likelihood-ratio noise, labelled paper)")
	fl.IntVar(&f.datasetSize, "dataset-size", 0, "dataset size n (needed by without-replacement)")
	fl.IntVar(&f.batch, "batch-size", 0, "batch size b (without-replacement; default q·n)")
	fl.Float64Var(&f.mixWidth, "mix-width", 0, "ModelMix: mixing box width over the clip norm, W = L/c")
	fl.IntVar(&f.linfParts, "linf-parts", 0, "ModelMix: p of the l2+l∞ clipping (0 or 1: l2 only)")
	fl.BoolVar(&f.json, "json", false, "print one JSON object per accountant, one per line")
}

// step builds the record of the described steps with the given σ, after checking the flags.
func (f *mechanismFlags) step(sigma float64) (accounting.Step, error) {
	q := f.sampleRate
	if !(q > 0 && q <= 1) {
		return accounting.Step{}, fmt.Errorf("--sample-rate %v must be in (0, 1]", q)
	}
	if !(f.delta > 0 && f.delta < 1) {
		return accounting.Step{}, fmt.Errorf("--delta %v must be in (0, 1)", f.delta)
	}
	steps := f.steps
	switch {
	case f.epochs > 0 && steps >= 0:
		return accounting.Step{}, errors.New("give --steps or --epochs, not both")
	case f.epochs > 0:
		steps = int(math.Ceil(f.epochs/q - 1e-9))
	case f.epochs < 0 || math.IsNaN(f.epochs):
		return accounting.Step{}, fmt.Errorf("--epochs %v must be positive", f.epochs)
	case steps < 0:
		return accounting.Step{}, errors.New("give the number of steps with --steps T (T ≥ 0), or --epochs E")
	}
	if !(f.mixWidth >= 0) || math.IsInf(f.mixWidth, 0) || f.linfParts < 0 {
		return accounting.Step{}, errors.New("--mix-width must be finite and ≥ 0 and --linf-parts ≥ 0")
	}
	s := accounting.Step{
		Mechanism: accounting.Mechanism(f.mechanism), NoiseMultiplier: sigma, SampleRate: q, Count: steps,
		Sensitivity: 1, NoiseStd: sigma, DatasetSize: f.datasetSize, MixWidth: f.mixWidth, LinfParts: f.linfParts,
	}
	switch f.sampling {
	case "poisson":
		s.Sampling, s.Neighbouring = accounting.Poisson, accounting.AddRemove
	case "full":
		if q != 1 {
			return accounting.Step{}, fmt.Errorf("--sampling full needs --sample-rate 1, got %v", q)
		}
		s.Sampling, s.Neighbouring = accounting.FullBatch, accounting.AddRemove
	case "without-replacement":
		if f.datasetSize <= 0 {
			return accounting.Step{}, errors.New("--sampling without-replacement needs --dataset-size N")
		}
		s.Sampling, s.Neighbouring = accounting.WithoutReplacement, accounting.ReplaceOne
		s.BatchSize = f.batch
		if s.BatchSize == 0 {
			s.BatchSize = int(math.Round(q * float64(f.datasetSize)))
		}
		// The analysis uses q = b/n; a --sample-rate that disagrees would misstate ε.
		if bq := float64(s.BatchSize) / float64(f.datasetSize); math.Abs(bq-q) > 1e-9*q {
			return accounting.Step{}, fmt.Errorf("--sample-rate %v is not batch size / dataset size = %d/%d = %v: give consistent values", q, s.BatchSize, f.datasetSize, bq)
		}
	case "poisson-with-rejection":
		if f.datasetSize <= 0 || f.minBatchSize < 1 {
			return accounting.Step{}, errors.New("--sampling poisson-with-rejection needs --dataset-size N and --min-batch-size N_B ≥ 1")
		}
		s.Sampling, s.Neighbouring, s.MinBatchSize = accounting.PoissonWithRejection, accounting.AddRemove, f.minBatchSize
	default:
		return accounting.Step{}, fmt.Errorf("--sampling %q: want poisson, without-replacement, full or poisson-with-rejection", f.sampling)
	}
	if f.minBatchSize != 0 && s.Sampling != accounting.PoissonWithRejection {
		return accounting.Step{}, errors.New("--min-batch-size applies to --sampling poisson-with-rejection only")
	}
	switch s.Mechanism {
	case accounting.Gaussian, accounting.SampledWithRejectionGaussian:
	default:
		return accounting.Step{}, fmt.Errorf("--mechanism %q: want gaussian or sampled-with-rejection-gaussian", f.mechanism)
	}
	return s, nil
}

// deltaWarning says when δ is not below 1/n for the dataset size the flags give (--dataset-size,
// or --batch-size/--sample-rate): a δ that large allows a mechanism that publishes a few records
// outright, so the guarantee means little.
func (f *mechanismFlags) deltaWarning() string {
	n := float64(f.datasetSize)
	if n == 0 && f.batch > 0 && f.sampleRate > 0 {
		n = float64(f.batch) / f.sampleRate
	}
	if n > 0 && f.delta >= 1/n {
		return fmt.Sprintf("--delta %g is not below 1/n = 1/%.0f: with δ ≥ 1/n a mechanism may publish whole records and still meet (ε, δ); use a δ well below 1/n, e.g. %.1g", f.delta, n, math.Pow(10, math.Floor(math.Log10(0.1/n))))
	}
	return ""
}

// run is what the accountants are told about the run: plain SGD, every iterate released.
func (f *mechanismFlags) run() accounting.Run {
	return accounting.Run{UpdateRule: "sgd", DatasetSize: f.datasetSize}
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
			s, err := f.step(f.sigma)
			if err != nil {
				return err
			}
			if w := f.deltaWarning(); w != "" {
				a.log.Warn(w)
			}
			names := []string{f.accountant}
			if f.accountant == "all" {
				names = compositionModes
			}
			out := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			if !f.json {
				fmt.Fprintf(tw, "accountant\tε\tδ\tlabel\torder\n")
			}
			var errs []error
			for _, name := range names {
				g, err := compare.Epsilon(name, f.run(), s, f.delta)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s: %s", name, inFlags(err.Error())))
					if !f.json {
						fmt.Fprintf(tw, "%s\tn/a\t%g\t\t(%s)\n", name, f.delta, inFlags(err.Error()))
					}
					continue
				}
				if f.json {
					b, _ := json.Marshal(accountLine{name, g.Epsilon, f.delta, g.Label, g.Order, s.Count, s.SampleRate, f.sigma})
					fmt.Fprintln(out, string(b))
				} else {
					order := ""
					if g.Order > 0 {
						order = fmt.Sprintf("%g", g.Order)
					}
					fmt.Fprintf(tw, "%s\t%.6g\t%g\t%s\t%s\n", name, g.Epsilon, f.delta, g.Label, order)
				}
			}
			tw.Flush()
			if len(errs) == len(names) {
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
			if _, err := f.step(1); err != nil {
				return err
			}
			if w := f.deltaWarning(); w != "" {
				a.log.Warn(w)
			}
			eps := func(sigma float64) (float64, error) {
				s, _ := f.step(sigma)
				g, err := compare.Epsilon(f.accountant, f.run(), s, f.delta)
				return g.Epsilon, err
			}
			sigma, err := accounting.CalibrateNoise(eps, target)
			if err != nil {
				return err
			}
			s, _ := f.step(sigma)
			g, err := compare.Epsilon(f.accountant, f.run(), s, f.delta)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if f.json {
				b, _ := json.Marshal(map[string]any{"accountant": f.accountant, "noise_multiplier": sigma, "epsilon": g.Epsilon,
					"target_epsilon": target, "delta": f.delta, "label": g.Label, "order": g.Order, "steps": s.Count, "sample_rate": s.SampleRate})
				fmt.Fprintln(out, string(b))
				return nil
			}
			fmt.Fprintf(out, "noise multiplier σ = %.6g gives ε = %.6g [%s, %s] at δ = %g over %d steps (q = %g)\n",
				sigma, g.Epsilon, f.accountant, g.Label, f.delta, s.Count, s.SampleRate)
			return nil
		},
	}
	cmd.Flags().StringVar(&f.accountant, "accountant", "rdp", "accountant: "+strings.Join(modes.Names(), ", "))
	cmd.Flags().Float64Var(&target, "target-epsilon", 0, "target ε")
	f.register(cmd, false)
	return cmd
}
