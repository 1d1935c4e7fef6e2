package benchmarks

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/dptrain/dptrain/algorithm/dpsgd"
	"github.com/dptrain/dptrain/algorithm/dpulr"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
	"github.com/dptrain/dptrain/optim"
)

// DP-ULR's step against DP-SGD's on the Table 1 MLP (784-128-64-32-10, GELU) and the same batch
// of 200 (Feng et al., "Forward Learning with Differential Privacy", report 23 vs 18 s/epoch on a
// GPU), for K = 1, 4, 16 noisy copies (16 is optimizer.dp_ulr's default), paper mode
// (eigen-direction top-up) and certified mode, with a fixed injected σ_l = 1 (the default), and
// paper mode with the Eq. 7 controller. Run with
//
//	go test -tags openblas -run '^$' -bench 'DPULR' ./benchmarks/
func BenchmarkDPULRStep(b *testing.B) {
	const batch = 200
	spec := models.Spec{Kind: "mlp", Input: []int{784}, Classes: 10, Hidden: []int{128, 64, 32}, Activation: "gelu"}
	rng := rand.New(rand.NewPCG(1, 2))
	sampler, err := data.NewSampler(data.SchemePoissonWithRejection, 60000, batch, batch/2, rng)
	if err != nil {
		b.Fatal(err)
	}
	info := data.PlannedBatch(sampler, 0)
	data := data.Batch{X: make([]float32, batch*784), Y: make([]int32, batch), N: batch}
	for i := range data.X {
		data.X[i] = float32(rng.NormFloat64())
	}
	for i := range data.Y {
		data.Y[i] = int32(rng.IntN(10))
	}
	run := func(b *testing.B, o optim.Optimizer) {
		m, err := graph.New(spec, rand.New(rand.NewPCG(3, 4)))
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			if _, err := o.Step(m, data, info); err != nil {
				b.Fatal(err)
			}
		}
	}
	sched := optim.Constant{Rate: 1e-3}
	b.Run("dpsgd", func(b *testing.B) {
		o, err := dpsgd.New(dpsgd.Config{NoiseMultiplier: 1, ClipNorm: 1, Schedule: sched}, optim.NewSeededNoise(5))
		if err != nil {
			b.Fatal(err)
		}
		run(b, o)
	})
	for _, c := range []struct {
		mode      string
		sigma     float64 // 0: the Eq. 7 controller
		certified bool
	}{{"paper", 1, false}, {"certified", 1, true}, {"paper-eq7", 0, false}} {
		for _, k := range []int{1, 4, 16} {
			b.Run(fmt.Sprintf("dpulr-%s-K%d", c.mode, k), func(b *testing.B) {
				o, err := dpulr.New(dpulr.Config{Copies: k, NoiseMultiplier: 1, ClipNorm: 1, Sigma: c.sigma, SigmaFloor: dpulr.DefaultSigmaFloor,
					Certified: c.certified, Schedule: sched}, optim.NewSeededNoise(5))
				if err != nil {
					b.Fatal(err)
				}
				run(b, o)
			})
		}
	}
}
