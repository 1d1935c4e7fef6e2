package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
)

func init() { benchSubcommands = append(benchSubcommands, newBenchULRCmd) }

// newBenchULRCmd times DP-ULR steps (Feng et al., "Forward Learning with Differential Privacy", Algorithm 1, paper and certified mode, K copies)
// and a DP-SGD step on the same GELU MLP and the same synthetic batch, round-robin.
func newBenchULRCmd(a *app) *cobra.Command {
	var hidden, copies []int
	var batch, rounds, warmup int
	var modes []string
	var sigmaL float64
	cmd := &cobra.Command{
		Use:   "ulr",
		Short: "Time DP-ULR steps (K = 1, 4, 16) next to a DP-SGD step on the same MLP",
		Long: `Time a DP-ULR step (clean pass, the Eq. 7 controller per layer, K noisy passes per layer
resumed from the layer's clean output, joint clipping; paper mode adds the eigen-direction
top-up, certified mode N(0, σ0²C²)) for each K and mode, and a DP-SGD step (ghost clipping,
Gaussian noise), on the same 784-...-10 GELU MLP (Table 1's by default) and the same synthetic
batch. Each round takes one step of every kind in turn; the report is the median ms per step
over the rounds and each DP-ULR median divided by DP-SGD's. The paper reports 23 s against
18 s per MNIST epoch on a GPU (1.3×).`,
		Example: `  dptrain bench ulr --batch 200 --copies 1,4,16 --rounds 7`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if batch < 2 || rounds <= 0 || warmup < 0 || len(copies) == 0 {
				return fmt.Errorf("--batch must be at least 2, --rounds positive, --warmup not negative and --copies non-empty")
			}
			for _, m := range modes {
				if m != "paper" && m != "certified" {
					return fmt.Errorf("--modes %q: want paper and/or certified", m)
				}
			}
			spec := models.Spec{Kind: "mlp", Input: []int{784}, Classes: 10, Hidden: hidden, Activation: "gelu"}
			rng := rand.New(rand.NewPCG(1, 2))
			nw, err := models.New(spec, rng)
			if err != nil {
				return err
			}
			b := models.Batch{X: make([]float32, batch*784), Y: make([]int32, batch), N: batch}
			for i := range b.X {
				b.X[i] = float32(rng.NormFloat64())
			}
			for i := range b.Y {
				b.Y[i] = int32(rng.IntN(10))
			}
			noise := optim.NewSeededNoise(3)
			sched := optim.Constant{Rate: 1e-3}
			dpsgd, err := optim.NewDPSGD(optim.DPSGDConfig{NoiseMultiplier: 1, ClipNorm: 1, Schedule: sched}, noise)
			if err != nil {
				return err
			}
			names, opts := []string{"DP-SGD"}, []optim.Optimizer{dpsgd}
			for _, m := range modes {
				for _, k := range copies {
					o, err := optim.NewDPULR(optim.DPULRConfig{Copies: k, NoiseMultiplier: 1, ClipNorm: 1, SigmaFloor: 0.01,
						Sigma: certifiedSigma(m, sigmaL), Certified: m == "certified", Schedule: sched}, noise)
					if err != nil {
						return err
					}
					names, opts = append(names, fmt.Sprintf("DP-ULR %s K=%d", m, k)), append(opts, o)
				}
			}
			// Poisson sampling with rejection as in training (q = batch/60000, N_B = batch/2).
			sampler, err := data.NewSampler(data.SchemePoissonWithRejection, 60000, batch, batch/2, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				return err
			}
			info := data.PlannedBatch(sampler, 0)
			times := make([][]float64, len(opts))
			for i := range warmup + rounds {
				for k, o := range opts {
					start := time.Now()
					if _, err := o.Step(nw, b, info); err != nil {
						return fmt.Errorf("%s: %w", names[k], err)
					}
					if i >= warmup {
						times[k] = append(times[k], time.Since(start).Seconds()*1000)
					}
				}
			}
			widths := make([]string, len(hidden))
			for i, h := range hidden {
				widths[i] = fmt.Sprint(h)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "mlp 784-%s-10 gelu (%d parameters), batch %d, blas %s, median of %d rounds\n",
				strings.Join(widths, "-"), len(nw.Params()), batch, models.BLAS(), rounds)
			base := median(times[0])
			for k, n := range names {
				fmt.Fprintf(out, "  %-24s %10.1f ms  %7.2f× DP-SGD\n", n, median(times[k]), median(times[k])/base)
			}
			return nil
		},
	}
	cmd.Flags().IntSliceVar(&hidden, "hidden", []int{128, 64, 32}, "hidden widths")
	cmd.Flags().IntSliceVar(&copies, "copies", []int{1, 4, 16}, "K values: noisy passes per example and layer")
	cmd.Flags().StringSliceVar(&modes, "modes", []string{"paper", "certified"}, "DP-ULR modes to time")
	cmd.Flags().Float64Var(&sigmaL, "sigma", 1, "certified mode's public injected noise σ_l (optimizer.dp_ulr.sigma)")
	cmd.Flags().IntVar(&batch, "batch", 200, "batch size")
	cmd.Flags().IntVar(&rounds, "rounds", 7, "timed rounds (one step of each kind per round)")
	cmd.Flags().IntVar(&warmup, "warmup", 1, "untimed rounds first")
	return cmd
}

// certifiedSigma is the injected σ_l of a timed mode: the public constant in certified mode,
// the paper's controller (0) otherwise.
func certifiedSigma(mode string, sigma float64) float64 {
	if mode == "certified" {
		return sigma
	}
	return 0
}
