package bench

import (
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/dptrain/dptrain/algorithm/dpsgd"
	"github.com/dptrain/dptrain/algorithm/dpulr"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
	"github.com/dptrain/dptrain/optim"
)

// ULRConfig is the setting of ULR: a 784-Hidden-10 GELU MLP, a synthetic batch, DP-ULR with
// every K of Copies in every mode of Modes (paper, certified), Warmup untimed and Rounds timed
// rounds.
type ULRConfig struct {
	Hidden, Copies        []int
	Modes                 []string
	Sigma                 float64 // certified mode's public injected noise σ_l
	Batch, Rounds, Warmup int
}

// ULRResult is what ULR measures: DP-SGD first, then every DP-ULR setting.
type ULRResult struct {
	Hidden        []int
	Params, Batch int
	BLAS          string
	Rounds        int
	Names         []string
	Ms            []float64 // median ms per step, by Names
}

// WriteText prints r as a short table, every median also as a multiple of DP-SGD's.
func (r ULRResult) WriteText(out io.Writer) {
	widths := make([]string, len(r.Hidden))
	for i, h := range r.Hidden {
		widths[i] = fmt.Sprint(h)
	}
	fmt.Fprintf(out, "mlp 784-%s-10 gelu (%d parameters), batch %d, blas %s, median of %d rounds\n",
		strings.Join(widths, "-"), r.Params, r.Batch, r.BLAS, r.Rounds)
	for k, n := range r.Names {
		fmt.Fprintf(out, "  %-24s %10.1f ms  %7.2f× DP-SGD\n", n, r.Ms[k], r.Ms[k]/r.Ms[0])
	}
}

// injectedSigma is the injected σ_l of a timed mode: the public constant in certified mode,
// the paper's controller (0) otherwise.
func injectedSigma(mode string, sigma float64) float64 {
	if mode == "certified" {
		return sigma
	}
	return 0
}

// ULR times DP-ULR steps (clean pass, the Eq. 7 controller per layer, K noisy passes per layer
// resumed from the layer's clean output, joint clipping; paper mode adds the eigen-direction
// top-up, certified mode N(0, σ0²C²)) for each K and mode, and a DP-SGD step, on the same MLP
// and synthetic batch; each round takes one step of every kind in turn.
func ULR(c ULRConfig) (ULRResult, error) {
	for _, m := range c.Modes {
		if m != "paper" && m != "certified" {
			return ULRResult{}, fmt.Errorf("--modes %q: want paper and/or certified", m)
		}
	}
	batch := c.Batch
	spec := models.Spec{Kind: "mlp", Input: []int{784}, Classes: 10, Hidden: c.Hidden, Activation: "gelu"}
	rng := rand.New(rand.NewPCG(1, 2))
	nw, err := graph.New(spec, rng)
	if err != nil {
		return ULRResult{}, err
	}
	b := data.Batch{X: make([]float32, batch*784), Y: make([]int32, batch), N: batch}
	for i := range b.X {
		b.X[i] = float32(rng.NormFloat64())
	}
	for i := range b.Y {
		b.Y[i] = int32(rng.IntN(10))
	}
	noise := optim.NewSeededNoise(3)
	sched := optim.Constant{Rate: 1e-3}
	dpsgd, err := dpsgd.New(dpsgd.Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: sched}, noise)
	if err != nil {
		return ULRResult{}, err
	}
	names, opts := []string{"DP-SGD"}, []optim.Optimizer{dpsgd}
	for _, m := range c.Modes {
		for _, k := range c.Copies {
			o, err := dpulr.New(dpulr.Config{Copies: k, NoiseMultiplier: 1, ClipNorm: 1, SigmaFloor: 0.01,
				Sigma: injectedSigma(m, c.Sigma), Certified: m == "certified", Schedule: sched}, noise)
			if err != nil {
				return ULRResult{}, err
			}
			names, opts = append(names, fmt.Sprintf("DP-ULR %s K=%d", m, k)), append(opts, o)
		}
	}
	// Poisson sampling with rejection as in training (q = batch/60000, N_B = batch/2).
	sampler, err := data.NewSampler(data.SchemePoissonWithRejection, 60000, batch, batch/2, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		return ULRResult{}, err
	}
	info := data.PlannedBatch(sampler, 0)
	times := make([][]float64, len(opts))
	for i := range c.Warmup + c.Rounds {
		for k, o := range opts {
			start := time.Now()
			if _, err := o.Step(nw, b, info); err != nil {
				return ULRResult{}, fmt.Errorf("%s: %w", names[k], err)
			}
			if i >= c.Warmup {
				times[k] = append(times[k], time.Since(start).Seconds()*1000)
			}
		}
	}
	res := ULRResult{Hidden: c.Hidden, Params: len(nw.Params()), Batch: batch, BLAS: models.BLAS(), Rounds: c.Rounds, Names: names}
	for _, t := range times {
		res.Ms = append(res.Ms, Median(t))
	}
	return res, nil
}
