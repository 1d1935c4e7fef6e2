package bench

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dptrain/dptrain/algorithm/dpsgd"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
	"github.com/dptrain/dptrain/optim"
)

// Result is what Throughput measures.
type Result struct {
	Model          string  `json:"model"`
	Params         int     `json:"params"`
	Batch          int     `json:"batch"`
	BLAS           string  `json:"blas"`
	BLASKernel     string  `json:"blas_kernel"`           // the core type whose kernels the BLAS runs
	BLASAdvice     string  `json:"blas_advice,omitempty"` // how to run the BLAS on faster kernels, if it can
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

// WriteText prints r as a short table.
func (r Result) WriteText(out io.Writer) {
	fmt.Fprintf(out, "%s (%d parameters), batch %d, blas %s (%s), engine %s, median of %d steps\n", r.Model, r.Params, r.Batch, r.BLAS, r.BLASKernel, r.Engine, r.Steps)
	fmt.Fprintf(out, "  non-private step  %8.2f ms  %8.1f MB peak RSS\n", r.SGDMsPerStep, r.SGDPeakRSSMB)
	fmt.Fprintf(out, "  DP-SGD step       %8.2f ms  %8.1f MB peak RSS\n", r.DPSGDMsPerStep, r.DPSGDPeakRSSMB)
	fmt.Fprintf(out, "  ratio             %8.2f×     %8.2f×\n", r.Ratio, r.MemoryRatio)
	fmt.Fprintf(out, "  allocs/step       %8.0f non-private, %.0f DP-SGD (%.1f / %.1f MB)\n",
		r.SGDAllocsPerStep, r.DPSGDAllocsPerStep, r.SGDBytesPerStep/1e6, r.DPSGDBytesPerStep/1e6)
	if r.BLASAdvice != "" {
		fmt.Fprintf(out, "  note: %s\n", r.BLASAdvice)
	}
}

// ThroughputConfig is the setting of Throughput.
type ThroughputConfig struct {
	// Model is mlp (784-512-10), cnn (cnn-tramer-boneh) or a preset; Engine as model.engine.
	Model, Engine        string
	Batch, Steps, Warmup int
	// CPUProfile and MemProfile name files for a CPU profile of the timed steps and an
	// allocation profile (sampled every 64 KiB); empty: none.
	CPUProfile, MemProfile string
}

// Spec maps the model names of Throughput to architectures on 28×28 inputs.
func Spec(name string) (models.Spec, error) {
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

// rig is a model, a fixed batch of synthetic data of the model's input shape, and the two
// optimizers being compared: the non-private baseline (σ = 0, no clipping) and DP-SGD (σ = 1,
// C = 1), through the same code path.
type rig struct {
	model      *models.Network
	batch      data.Batch
	info       data.BatchInfo
	sgd, dpsgd *dpsgd.Optimizer
}

func newRig(name, engine string, batch int) (*rig, error) {
	spec, err := Spec(name)
	if err != nil {
		return nil, err
	}
	spec.Engine = engine
	rng := rand.New(rand.NewPCG(1, 2))
	nw, err := graph.New(spec, rng)
	if err != nil {
		return nil, err
	}
	d := 1
	for _, x := range nw.InputShape() {
		d *= x
	}
	b := data.Batch{X: make([]float32, batch*d), Y: make([]int32, batch), N: batch}
	for i := range b.X {
		b.X[i] = float32(rng.NormFloat64())
	}
	for i := range b.Y {
		b.Y[i] = int32(rng.IntN(nw.Classes()))
	}
	noise := optim.NewSeededNoise(3)
	sched := optim.Constant{Rate: 1e-3}
	sgd, err := dpsgd.New(dpsgd.Config{ClipNorm: math.Inf(1), Schedule: sched}, noise)
	if err != nil {
		return nil, err
	}
	dp, err := dpsgd.New(dpsgd.Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: sched}, noise)
	if err != nil {
		return nil, err
	}
	// A fixed batch size keeps both steps on the same work; Poisson batches vary around it.
	sampler, err := data.NewSampler(data.SchemeShuffled, 60000, batch, 0, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		return nil, err
	}
	info := data.PlannedBatch(sampler, 0)
	return &rig{model: nw, batch: b, info: info, sgd: sgd, dpsgd: dp}, nil
}

func (r *rig) step(private bool) (time.Duration, error) {
	o := r.sgd
	if private {
		o = r.dpsgd
	}
	start := time.Now()
	_, err := o.Step(r.model, r.batch, r.info)
	return time.Since(start), err
}

// PeakRSS runs Warmup+Steps steps of one kind (dpsgd, or the non-private one) and returns the
// process's peak resident set size in KiB (on Linux): run it in a child process of its own.
func PeakRSS(c ThroughputConfig, kind string) (int64, error) {
	r, err := newRig(c.Model, c.Engine, c.Batch)
	if err != nil {
		return 0, err
	}
	for range c.Warmup + c.Steps {
		if _, err := r.step(kind == "dpsgd"); err != nil {
			return 0, err
		}
	}
	return peakKiB(), nil
}

// peakKiB is this process's peak resident set size in KiB: VmHWM from /proc/self/status where
// there is one (Linux), else getrusage's ru_maxrss. ru_maxrss alone would not do: Linux carries
// it across fork and exec, so a child reports at least its parent's peak at the time it was
// started (the process that timed the steps, or a Python interpreter with torch loaded).
func peakKiB() int64 {
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				if kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64); err == nil {
					return kib
				}
			}
		}
	}
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss
}

// Throughput times a non-private SGD step (no clipping, no noise) and a DP-SGD step on the same
// model and batch, alternating the two so that machine noise hits both alike, and returns the
// medians, their ratio and the allocations per step. Peak memory is left to the caller (see
// PeakRSS).
func Throughput(c ThroughputConfig) (Result, error) {
	r, err := newRig(c.Model, c.Engine, c.Batch)
	if err != nil {
		return Result{}, err
	}
	for range c.Warmup {
		for _, p := range []bool{false, true} {
			if _, err := r.step(p); err != nil {
				return Result{}, err
			}
		}
	}
	if c.CPUProfile != "" {
		f, err := os.Create(c.CPUProfile)
		if err != nil {
			return Result{}, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return Result{}, err
		}
		defer pprof.StopCPUProfile()
	}
	if c.MemProfile != "" {
		runtime.MemProfileRate = 64 << 10
		defer func() {
			if f, err := os.Create(c.MemProfile); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	var ts, td []float64
	// allocs and bytes per kind (index 1: DP-SGD), read around each step outside its timing.
	var allocs, bytes [2]uint64
	var before, after runtime.MemStats
	for i := range c.Steps {
		order := []bool{false, true}
		if i%2 == 1 {
			order = []bool{true, false}
		}
		for _, p := range order {
			runtime.ReadMemStats(&before)
			d, err := r.step(p)
			if err != nil {
				return Result{}, err
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
	res := Result{Model: c.Model, Params: len(r.model.Params()), Batch: c.Batch, BLAS: models.BLAS(), BLASKernel: models.BLASKernel(), BLASAdvice: models.BLASAdvice(), Steps: c.Steps,
		SGDMsPerStep: Median(ts), DPSGDMsPerStep: Median(td), Engine: r.model.Engine()}
	res.Ratio = res.DPSGDMsPerStep / res.SGDMsPerStep
	n := float64(c.Steps)
	res.SGDAllocsPerStep, res.DPSGDAllocsPerStep = float64(allocs[0])/n, float64(allocs[1])/n
	res.SGDBytesPerStep, res.DPSGDBytesPerStep = float64(bytes[0])/n, float64(bytes[1])/n
	return res, nil
}

// Median is the median of v (the mean of the middle two when len(v) is even).
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
