package bench

import (
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/dptrain/dptrain/algorithm/dpmbcd"
	"github.com/dptrain/dptrain/algorithm/dpsgd"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
	"github.com/dptrain/dptrain/models/lifted"
	"github.com/dptrain/dptrain/optim"
)

// MBCDConfig is the setting of MBCD: a 784-Hidden-10 bias-free ReLU MLP, a synthetic batch of
// Batch examples (also the dataset), Warmup untimed and Steps timed steps of each kind.
type MBCDConfig struct {
	Hidden               []int
	Batch, Steps, Warmup int
}

// MBCDResult is what MBCD measures.
type MBCDResult struct {
	Hidden          []int
	Params, Batch   int
	BLAS            string
	Steps           int
	MBCDMs, DPSGDMs float64 // median ms per step
}

// WriteText prints r as a short table.
func (r MBCDResult) WriteText(out io.Writer) {
	widths := ""
	for _, h := range r.Hidden {
		widths += fmt.Sprintf("%d-", h)
	}
	fmt.Fprintf(out, "mlp 784-%s10 no bias (%d parameters), batch %d, blas %s, median of %d steps\n", widths, r.Params, r.Batch, r.BLAS, r.Steps)
	fmt.Fprintf(out, "  DP-MBCD step  %10.1f ms\n", r.MBCDMs)
	fmt.Fprintf(out, "  DP-SGD step   %10.1f ms\n", r.DPSGDMs)
	fmt.Fprintf(out, "  ratio         %10.2f×\n", r.MBCDMs/r.DPSGDMs)
}

// MBCD times a DP-MBCD step (hidden x- and u-updates of the lifted network by Cholesky and
// closed forms, then the private step of every weight block) and a DP-SGD step (ghost
// clipping, Gaussian noise) on the same bias-free ReLU MLP and synthetic batch, alternating
// them. The batch is the whole dataset, so after the warm-up DP-MBCD reads its kept
// auxiliaries, as in training after the first epoch; Warmup must be at least 1.
func MBCD(c MBCDConfig) (MBCDResult, error) {
	batch := c.Batch
	spec := models.Spec{Kind: "mlp", Input: []int{784}, Classes: 10, Hidden: c.Hidden, Activation: "relu", NoBias: true}
	rng := rand.New(rand.NewPCG(1, 2))
	nw, err := graph.New(spec, rng)
	if err != nil {
		return MBCDResult{}, err
	}
	b := data.Batch{X: make([]float32, batch*784), Y: make([]int32, batch), N: batch, Index: make([]int, batch)}
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
		return MBCDResult{}, err
	}
	noise := optim.NewSeededNoise(3)
	sched := optim.Constant{Rate: 0.1}
	mbcd, err := dpmbcd.New(dpmbcd.Config{Lifted: lm, Offsets: offsets, NoiseMultiplier: 1, ClipNorm: 1, Schedule: sched}, noise)
	if err != nil {
		return MBCDResult{}, err
	}
	dpsgd, err := dpsgd.New(dpsgd.Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: sched}, noise)
	if err != nil {
		return MBCDResult{}, err
	}
	sampler, err := data.NewSampler(data.SchemeShuffledOnce, batch, batch, 0, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		return MBCDResult{}, err
	}
	info := data.PlannedBatch(sampler, 0)
	opts := []optim.Optimizer{mbcd, dpsgd}
	times := [2][]float64{}
	for i := range c.Warmup + c.Steps {
		for k, o := range opts {
			start := time.Now()
			if _, err := o.Step(nw, b, info); err != nil {
				return MBCDResult{}, err
			}
			if i >= c.Warmup {
				times[k] = append(times[k], time.Since(start).Seconds()*1000)
			}
		}
	}
	return MBCDResult{Hidden: c.Hidden, Params: len(nw.Params()), Batch: batch, BLAS: models.BLAS(), Steps: c.Steps,
		MBCDMs: Median(times[0]), DPSGDMs: Median(times[1])}, nil
}
