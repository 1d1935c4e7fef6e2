package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting/compare"
	"github.com/dptrain/dptrain/accounting/tuning"
	"github.com/spf13/cobra"
)

func init() { accountSubcommands = append(accountSubcommands, newAccountTuneCmd) }

// tuneFlags describe the number of candidates of a private hyperparameter search.
type tuneFlags struct {
	law       string
	mean, eta float64
}

// distribution builds the law of the number of candidates the flags describe.
func (t tuneFlags) distribution() (tuning.Distribution, error) {
	switch t.law {
	case "poisson":
		if !(t.mean > 0) || math.IsInf(t.mean, 0) {
			return tuning.Distribution{}, fmt.Errorf("--mean-candidates %v: the Poisson mean number of candidates must be a positive number", t.mean)
		}
		return tuning.Poisson(t.mean), nil
	case "logarithmic", "geometric", "negative-binomial":
		eta := t.eta
		switch t.law {
		case "logarithmic":
			eta = 0
		case "geometric":
			eta = 1
		}
		gamma, err := tuning.GammaForMean(eta, t.mean)
		if err != nil {
			return tuning.Distribution{}, fmt.Errorf("--mean-candidates %v, --eta %v: %w", t.mean, eta, err)
		}
		return tuning.TruncatedNegativeBinomial(eta, gamma), nil
	}
	return tuning.Distribution{}, fmt.Errorf("--candidates %q: want poisson, logarithmic, geometric or negative-binomial", t.law)
}

func newAccountTuneCmd(a *app) *cobra.Command {
	var f mechanismFlags
	var t tuneFlags
	var target float64
	cmd := &cobra.Command{
		Use:   "tune",
		Short: "The ε of a private hyperparameter search that releases only the best of K candidate runs",
		Long: `Compute, ahead of any run, what a hyperparameter search costs when it trains a random number K of
candidates (DP-SGD runs of T steps, Poisson sampling with rate q, noise multiplier σ) and releases
only the best one (Papernot & Steinke, "Hyperparameter Tuning with Renyi Differential Privacy",
ICLR 2022: Theorem 2 for K truncated negative binomial, logarithmic or geometric; Theorem 6 for K
Poisson). It prints one candidate's ε, the search's ε (certified: the RDP bound converted as the
rdp accountant converts it) and the difference. With --target-epsilon it calibrates σ so that
the whole search meets the target, and prints the σ a single run would need beside it.

The theorems hold when K is drawn independently of the data, every candidate is an independent
run of one randomised procedure (its hyperparameters drawn from a fixed distribution), the score
that selects the best candidate is itself private and counted in the candidate, and nothing
about the other candidates is released.`,
		Example: `  dptrain account tune --candidates poisson --mean-candidates 10 --sample-rate 0.004267 --noise-multiplier 1.1 --epochs 60
  dptrain account tune --candidates geometric --mean-candidates 10 --sample-rate 0.0683 --epochs 40 --target-epsilon 3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.Sampling != "poisson" || f.Mechanism != "gaussian" || f.MixWidth != 0 || f.LinfParts != 0 {
				return errors.New("account tune covers candidates of Poisson-sampled Gaussian steps (DP-SGD): leave --sampling, --mechanism, --mix-width and --linf-parts at their defaults")
			}
			dist, err := t.distribution()
			if err != nil {
				return err
			}
			sigma := f.sigma
			if target != 0 {
				if !(target > 0) || math.IsInf(target, 0) {
					return fmt.Errorf("--target-epsilon %v must be a positive number", target)
				}
				if sigma != 0 {
					return errors.New("give --noise-multiplier or --target-epsilon, not both")
				}
				sigma = 1
			}
			s, err := f.Step(sigma)
			if err != nil {
				return err
			}
			if s.Count < 1 {
				return errors.New("a candidate runs at least one step: give --steps T ≥ 1 or --epochs")
			}
			if w := f.DeltaWarning(); w != "" {
				a.log.Warn(w)
			}
			single := 0.0
			if target != 0 {
				if sigma, _, err = tuning.CalibrateSampledGaussian(dist, s.SampleRate, s.Count, target, f.Delta, nil); err != nil {
					return err
				}
				if single, _, _, err = compare.Calibrate("rdp", f.Repeated, target); err != nil {
					return err
				}
			}
			curve := func(order float64) float64 {
				c, err := tuning.SampledGaussianCurve(s.SampleRate, sigma, s.Count, []float64{order})
				if err != nil {
					return math.NaN()
				}
				return c[0]
			}
			o, err := tuning.Cost(curve, dist, nil, f.Delta)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if f.json {
				m := map[string]any{"candidates": dist.String(), "mean_candidates": o.Mean, "noise_multiplier": sigma,
					"sample_rate": s.SampleRate, "steps": s.Count, "delta": f.Delta,
					"single_epsilon": o.Single.Epsilon, "search_epsilon": o.Search.Epsilon, "extra_epsilon": o.Extra,
					"label": o.Search.Label, "order": o.Search.Order}
				if target != 0 {
					m["target_epsilon"] = target
				}
				b, _ := json.Marshal(m)
				fmt.Fprintln(out, string(b))
				return nil
			}
			fmt.Fprintf(out, "candidates: K ~ %s, E[K] = %.4g; each %d steps at q = %g, σ = %.6g\n", dist, o.Mean, s.Count, s.SampleRate, sigma)
			fmt.Fprintf(out, "one candidate: ε = %.6g [rdp, %s]\n", o.Single.Epsilon, o.Single.Label)
			fmt.Fprintf(out, "the search (best of K released): ε = %.6g [tuning, %s] at δ = %g\n", o.Search.Epsilon, o.Search.Label, f.Delta)
			fmt.Fprintln(out, o)
			if target != 0 {
				fmt.Fprintf(out, "σ = %.6g meets ε ≤ %g for the whole search; a single run would need σ = %.6g\n", sigma, target, single)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&t.law, "candidates", "poisson", "law of the number of candidates K: poisson, logarithmic, geometric or negative-binomial (with --eta)")
	fl.Float64Var(&t.mean, "mean-candidates", 10, "E[K], the expected number of candidates")
	fl.Float64Var(&t.eta, "eta", 0.5, "negative-binomial: the shape η > −1")
	fl.Float64Var(&target, "target-epsilon", 0, "calibrate σ so that the whole search meets this ε")
	f.register(cmd, true)
	return cmd
}
