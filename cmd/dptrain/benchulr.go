package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/bench"
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
			r, err := bench.ULR(bench.ULRConfig{Hidden: hidden, Copies: copies, Modes: modes, Sigma: sigmaL, Batch: batch, Rounds: rounds, Warmup: warmup})
			if err != nil {
				return err
			}
			r.WriteText(cmd.OutOrStdout())
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
