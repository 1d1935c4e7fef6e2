package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dptrain/dptrain/cmd/dptrain/internal/bench"
)

func init() { subcommands = append(subcommands, newBenchCmd) }

func newBenchCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the cost of privacy on this machine",
	}
	cmd.AddCommand(newBenchThroughputCmd(a))
	for _, sub := range benchSubcommands {
		cmd.AddCommand(sub(a))
	}
	return cmd
}

// benchSubcommands are the bench commands defined in other files.
var benchSubcommands []func(*app) *cobra.Command

func newBenchThroughputCmd(a *app) *cobra.Command {
	var model, engine, measure, cpuprofile, memprofile string
	var batch, steps, warmup int
	var asJSON, noMemory bool
	cmd := &cobra.Command{
		Use:   "throughput",
		Short: "Time a non-private step and a DP-SGD step on the same model and batch, in one run",
		Long: `Time a non-private SGD step (no clipping, no noise) and a DP-SGD step (per-sample clipping
and Gaussian noise) on the same model and the same synthetic batch, alternating the two so that
machine noise hits both alike, and report the median ms per step and their ratio. Peak memory
(maximum resident set size) of each kind of step is measured in a child process of its own.`,
		Example: `  dptrain bench throughput --model mlp --batch 256 --json
  dptrain bench throughput --model cnn --batch 256`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if batch <= 0 || steps <= 0 || warmup < 0 {
				return fmt.Errorf("--batch and --steps must be positive and --warmup not negative")
			}
			c := bench.ThroughputConfig{Model: model, Engine: engine, Batch: batch, Steps: steps, Warmup: warmup, CPUProfile: cpuprofile, MemProfile: memprofile}
			if measure != "" { // child process: run one kind of step, report peak RSS
				kib, err := bench.PeakRSS(c, measure)
				if err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), kib) // KiB on Linux
				return nil
			}
			res, err := bench.Throughput(c)
			if err != nil {
				return err
			}
			if !noMemory {
				s, err1 := bench.ChildPeakRSS(c, "sgd")
				d, err2 := bench.ChildPeakRSS(c, "dpsgd")
				if err1 != nil || err2 != nil {
					a.log.Warnf("peak memory not measured: %v %v", err1, err2)
				} else {
					res.SGDPeakRSSMB, res.DPSGDPeakRSSMB, res.MemoryRatio = s, d, d/s
				}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				b, _ := json.Marshal(res)
				fmt.Fprintln(out, string(b))
				return nil
			}
			res.WriteText(out)
			return nil
		},
	}
	cmd.Flags().StringVar(&model, "model", "mlp", "mlp (784-512-10), cnn (cnn-tramer-boneh) or a preset")
	cmd.Flags().StringVar(&engine, "engine", "auto", "auto, direct (own executor), dnnl (direct with oneDNN convolutions; -tags dnnl) or graph (gorgonia), as model.engine")
	cmd.Flags().IntVar(&batch, "batch", 256, "batch size")
	cmd.Flags().IntVar(&steps, "steps", 20, "timed steps of each kind")
	cmd.Flags().IntVar(&warmup, "warmup", 3, "untimed steps of each kind first")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&noMemory, "no-memory", false, "skip the peak-memory measurement")
	cmd.Flags().StringVar(&cpuprofile, "cpuprofile", "", "write a CPU profile of the timed steps (both kinds) to this file")
	cmd.Flags().StringVar(&memprofile, "memprofile", "", "write an allocation profile (sampled every 64 KiB) to this file at the end")
	cmd.Flags().StringVar(&measure, "measure-child", "", "internal: run one kind of step and print peak RSS")
	cmd.Flags().MarkHidden("measure-child")
	return cmd
}
