package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
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

// benchResult is what bench throughput prints.
type benchResult struct {
	Model          string  `json:"model"`
	Params         int     `json:"params"`
	Batch          int     `json:"batch"`
	BLAS           string  `json:"blas"`
	Engine         string  `json:"engine"`
	Steps          int     `json:"steps"`
	SGDMsPerStep   float64 `json:"sgd_ms_per_step"`
	DPSGDMsPerStep float64 `json:"dpsgd_ms_per_step"`
	Ratio          float64 `json:"ratio"`
	SGDPeakRSSMB   float64 `json:"sgd_peak_rss_mb,omitempty"`
	DPSGDPeakRSSMB float64 `json:"dpsgd_peak_rss_mb,omitempty"`
	MemoryRatio    float64 `json:"memory_ratio,omitempty"`
	// Heap allocations and bytes per step (means over the timed steps of each kind).
	SGDAllocsPerStep   float64 `json:"sgd_allocs_per_step"`
	DPSGDAllocsPerStep float64 `json:"dpsgd_allocs_per_step"`
	SGDBytesPerStep    float64 `json:"sgd_bytes_per_step"`
	DPSGDBytesPerStep  float64 `json:"dpsgd_bytes_per_step"`
}

// benchSpec maps the --model names to architectures on 28×28 inputs.
func benchSpec(name string) (models.Spec, error) {
	switch name {
	case "mlp":
		return models.Spec{Kind: "mlp", Input: []int{784}, Classes: 10, Hidden: []int{512}, Activation: "relu"}, nil
	case "cnn":
		return models.Spec{Kind: "cnn-tramer-boneh"}, nil
	}
	if slices.Contains(models.Presets(), name) {
		return models.Spec{Kind: name}, nil
	}
	return models.Spec{}, fmt.Errorf("--model %q: want mlp (784-512-10), cnn (cnn-tramer-boneh) or a preset: %s", name, strings.Join(models.Presets(), ", "))
}

// benchRig is a model, a fixed batch of synthetic data of the model's input shape, and the two
// optimizers being compared: the non-private baseline (σ = 0, no clipping) and DP-SGD (σ = 1,
// C = 1), through the same code path.
type benchRig struct {
	model      *models.Network
	batch      models.Batch
	info       optim.BatchInfo
	sgd, dpsgd *optim.DPSGD
}

func newBenchRig(name, engine string, batch int) (*benchRig, error) {
	spec, err := benchSpec(name)
	if err != nil {
		return nil, err
	}
	spec.Engine = engine
	rng := rand.New(rand.NewPCG(1, 2))
	nw, err := models.New(spec, rng)
	if err != nil {
		return nil, err
	}
	d := 1
	for _, x := range nw.InputShape() {
		d *= x
	}
	b := models.Batch{X: make([]float32, batch*d), Y: make([]int32, batch), N: batch}
	for i := range b.X {
		b.X[i] = float32(rng.NormFloat64())
	}
	for i := range b.Y {
		b.Y[i] = int32(rng.IntN(nw.Classes()))
	}
	noise := optim.NewSeededNoise(3)
	sched := optim.Constant{Rate: 1e-3}
	sgd, err := optim.NewDPSGD(optim.DPSGDConfig{ClipNorm: math.Inf(1), Schedule: sched}, noise)
	if err != nil {
		return nil, err
	}
	dp, err := optim.NewDPSGD(optim.DPSGDConfig{NoiseMultiplier: 1, ClipNorm: 1, Schedule: sched}, noise)
	if err != nil {
		return nil, err
	}
	// A fixed batch size keeps both steps on the same work; Poisson batches vary around it.
	sampler, err := data.NewSampler(data.SchemeShuffled, 60000, batch, 0, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		return nil, err
	}
	info := data.PlannedBatch(sampler, 0)
	return &benchRig{model: nw, batch: b, info: info, sgd: sgd, dpsgd: dp}, nil
}

func (r *benchRig) step(private bool) (time.Duration, error) {
	o := r.sgd
	if private {
		o = r.dpsgd
	}
	start := time.Now()
	_, err := o.Step(r.model, r.batch, r.info)
	return time.Since(start), err
}

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
			rig, err := newBenchRig(model, engine, batch)
			if err != nil {
				return err
			}
			if measure != "" { // child process: run one kind of step, report peak RSS
				for range warmup + steps {
					if _, err := rig.step(measure == "dpsgd"); err != nil {
						return err
					}
				}
				var ru syscall.Rusage
				syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
				fmt.Fprintln(cmd.OutOrStdout(), ru.Maxrss) // KiB on Linux
				return nil
			}
			for range warmup {
				for _, p := range []bool{false, true} {
					if _, err := rig.step(p); err != nil {
						return err
					}
				}
			}
			if cpuprofile != "" {
				f, err := os.Create(cpuprofile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			if memprofile != "" {
				runtime.MemProfileRate = 64 << 10
				defer func() {
					if f, err := os.Create(memprofile); err == nil {
						_ = pprof.Lookup("allocs").WriteTo(f, 0)
						f.Close()
					}
				}()
			}
			var ts, td []float64
			// allocs and bytes per kind (index 1: DP-SGD), read around each step outside its timing.
			var allocs, bytes [2]uint64
			var before, after runtime.MemStats
			for i := range steps {
				order := []bool{false, true}
				if i%2 == 1 {
					order = []bool{true, false}
				}
				for _, p := range order {
					runtime.ReadMemStats(&before)
					d, err := rig.step(p)
					if err != nil {
						return err
					}
					runtime.ReadMemStats(&after)
					k := 0
					if p {
						k = 1
					}
					allocs[k] += after.Mallocs - before.Mallocs
					bytes[k] += after.TotalAlloc - before.TotalAlloc
					if p {
						td = append(td, d.Seconds()*1000)
					} else {
						ts = append(ts, d.Seconds()*1000)
					}
				}
			}
			res := benchResult{Model: model, Params: len(rig.model.Params()), Batch: batch, BLAS: models.BLAS(), Steps: steps,
				SGDMsPerStep: median(ts), DPSGDMsPerStep: median(td), Engine: rig.model.Engine()}
			res.Ratio = res.DPSGDMsPerStep / res.SGDMsPerStep
			n := float64(steps)
			res.SGDAllocsPerStep, res.DPSGDAllocsPerStep = float64(allocs[0])/n, float64(allocs[1])/n
			res.SGDBytesPerStep, res.DPSGDBytesPerStep = float64(bytes[0])/n, float64(bytes[1])/n
			if !noMemory {
				s, err1 := childRSS(model, engine, batch, warmup, steps, "sgd")
				d, err2 := childRSS(model, engine, batch, warmup, steps, "dpsgd")
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
			fmt.Fprintf(out, "%s (%d parameters), batch %d, blas %s, engine %s, median of %d steps\n", res.Model, res.Params, res.Batch, res.BLAS, res.Engine, steps)
			fmt.Fprintf(out, "  non-private step  %8.2f ms  %8.1f MB peak RSS\n", res.SGDMsPerStep, res.SGDPeakRSSMB)
			fmt.Fprintf(out, "  DP-SGD step       %8.2f ms  %8.1f MB peak RSS\n", res.DPSGDMsPerStep, res.DPSGDPeakRSSMB)
			fmt.Fprintf(out, "  ratio             %8.2f×     %8.2f×\n", res.Ratio, res.MemoryRatio)
			fmt.Fprintf(out, "  allocs/step       %8.0f non-private, %.0f DP-SGD (%.1f / %.1f MB)\n",
				res.SGDAllocsPerStep, res.DPSGDAllocsPerStep, res.SGDBytesPerStep/1e6, res.DPSGDBytesPerStep/1e6)
			return nil
		},
	}
	cmd.Flags().StringVar(&model, "model", "mlp", "mlp (784-512-10), cnn (cnn-tramer-boneh) or a preset")
	cmd.Flags().StringVar(&engine, "engine", "auto", "auto, direct (own executor) or graph (gorgonia), as model.engine")
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

// childRSS runs this binary on one kind of step and returns its peak RSS in MB.
func childRSS(model, engine string, batch, warmup, steps int, kind string) (float64, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	out, err := exec.Command(exe, "bench", "throughput", "--model", model, "--engine", engine, "--batch", strconv.Itoa(batch),
		"--warmup", strconv.Itoa(warmup), "--steps", strconv.Itoa(min(steps, 5)), "--measure-child", kind).Output()
	if err != nil {
		return 0, fmt.Errorf("%s child: %w", kind, err)
	}
	kib, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		return 0, fmt.Errorf("%s child printed %q", kind, out)
	}
	return kib / 1024, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
