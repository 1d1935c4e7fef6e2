package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/bench"
)

func init() { benchSubcommands = append(benchSubcommands, newBenchMBCDCmd) }

// newBenchMBCDCmd times a DP-MBCD step (Chen & Liu, "Hidden State Differential Private Mini-Batch Block Coordinate Descent",
// Algorithm 4 with Eq. 14) and a DP-SGD step on
// the same bias-free ReLU MLP and the same synthetic batch, alternating them.
func newBenchMBCDCmd(a *app) *cobra.Command {
	var hidden []int
	var batch, steps, warmup int
	cmd := &cobra.Command{
		Use:   "mbcd",
		Short: "Time a DP-MBCD step next to a DP-SGD step on the same bias-free ReLU MLP",
		Long: `Time a DP-MBCD step (hidden x- and u-updates of the lifted network by Cholesky and closed
forms, then the private step of every weight block) and a DP-SGD step (ghost clipping, Gaussian
noise) on the same 784-...-10 bias-free ReLU MLP and the same synthetic batch, alternating the
two, and report the median ms per step. The batch is the whole (synthetic) dataset, so after the
warm-up DP-MBCD reads its kept auxiliaries, as in training after the first epoch.`,
		Example: `  dptrain bench mbcd --hidden 1200,1200,1200 --batch 2000 --steps 3 --warmup 1`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if batch <= 0 || steps <= 0 || warmup < 1 {
				return fmt.Errorf("--batch and --steps must be positive and --warmup at least 1 (the first DP-MBCD visit initialises the auxiliaries)")
			}
			r, err := bench.MBCD(bench.MBCDConfig{Hidden: hidden, Batch: batch, Steps: steps, Warmup: warmup})
			if err != nil {
				return err
			}
			r.WriteText(cmd.OutOrStdout())
			return nil
		},
	}
	cmd.Flags().IntSliceVar(&hidden, "hidden", []int{1200, 1200, 1200}, "hidden widths")
	cmd.Flags().IntVar(&batch, "batch", 2000, "batch size (also the synthetic dataset's size)")
	cmd.Flags().IntVar(&steps, "steps", 3, "timed steps of each kind")
	cmd.Flags().IntVar(&warmup, "warmup", 1, "untimed steps of each kind first (≥ 1)")
	return cmd
}
