package main

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/spf13/cobra"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/lifted"
	"github.com/dptrain/dptrain/optim"
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
			spec := models.Spec{Kind: "mlp", Input: []int{784}, Classes: 10, Hidden: hidden, Activation: "relu", NoBias: true}
			rng := rand.New(rand.NewPCG(1, 2))
			nw, err := models.New(spec, rng)
			if err != nil {
				return err
			}
			b := models.Batch{X: make([]float32, batch*784), Y: make([]int32, batch), N: batch, Index: make([]int, batch)}
			for i := range b.X {
				b.X[i] = float32(rng.NormFloat64())
			}
			for i := range b.Y {
				b.Y[i], b.Index[i] = int32(rng.IntN(10)), i
			}
			sizes := []int{784}
			var offsets []int
			for _, p := range nw.Layout() {
				sizes, offsets = append(sizes, p.Shape[1]), append(offsets, p.Offset)
			}
			clips := make([]float64, len(offsets))
			for i := range clips {
				clips[i] = 1
			}
			lm, err := lifted.New(lifted.Config{Sizes: sizes, ActivationClip: clips, DatasetSize: batch})
			if err != nil {
				return err
			}
			noise := optim.NewSeededNoise(3)
			sched := optim.Constant{Rate: 0.1}
			mbcd, err := optim.NewDPMBCD(optim.DPMBCDConfig{Lifted: lm, Offsets: offsets, NoiseMultiplier: 1, ClipNorm: 1, Schedule: sched}, noise)
			if err != nil {
				return err
			}
			dpsgd, err := optim.NewDPSGD(optim.DPSGDConfig{NoiseMultiplier: 1, ClipNorm: 1, Schedule: sched}, noise)
			if err != nil {
				return err
			}
			sampler, err := data.NewSampler(data.SchemeShuffledOnce, batch, batch, 0, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				return err
			}
			info := data.PlannedBatch(sampler, 0)
			opts := []optim.Optimizer{mbcd, dpsgd}
			times := [2][]float64{}
			for i := range warmup + steps {
				for k, o := range opts {
					start := time.Now()
					if _, err := o.Step(nw, b, info); err != nil {
						return err
					}
					if i >= warmup {
						times[k] = append(times[k], time.Since(start).Seconds()*1000)
					}
				}
			}
			out := cmd.OutOrStdout()
			widths := ""
			for _, h := range hidden {
				widths += fmt.Sprintf("%d-", h)
			}
			fmt.Fprintf(out, "mlp 784-%s10 no bias (%d parameters), batch %d, blas %s, median of %d steps\n", widths, len(nw.Params()), batch, models.BLAS(), steps)
			fmt.Fprintf(out, "  DP-MBCD step  %10.1f ms\n", median(times[0]))
			fmt.Fprintf(out, "  DP-SGD step   %10.1f ms\n", median(times[1]))
			fmt.Fprintf(out, "  ratio         %10.2f×\n", median(times[0])/median(times[1]))
			return nil
		},
	}
	cmd.Flags().IntSliceVar(&hidden, "hidden", []int{1200, 1200, 1200}, "hidden widths")
	cmd.Flags().IntVar(&batch, "batch", 2000, "batch size (also the synthetic dataset's size)")
	cmd.Flags().IntVar(&steps, "steps", 3, "timed steps of each kind")
	cmd.Flags().IntVar(&warmup, "warmup", 1, "untimed steps of each kind first (≥ 1)")
	return cmd
}
