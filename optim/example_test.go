package optim_test

import (
	"fmt"
	"log"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// One DP-SGD step built from optim's parts (Abadi et al., "Deep Learning with Differential
// Privacy", Algorithm 1) on a two-parameter model whose example i has gradient (i, 1): a
// Poisson batch at q = 4/100 from the data sampler, each example's gradient clipped to norm
// C = 1, their sum noised with N(0, (σC)²) at σ = 1.1 and divided by the public q·n, then a plain
// SGD update at η = 0.1, and the record the accountants read. The seeded noise makes the
// output reproducible and the step NOT private: a run that is released draws its noise from
// optim.NewNoise.
func Example() {
	const clip, sigma, lr = 1.0, 1.1, 0.1
	noise := optim.NewSeededNoise(1)
	sampler, err := data.NewSampler(data.SchemePoisson, 100, 4, 0, noise.Split().Rand())
	if err != nil {
		log.Fatal(err)
	}
	idx, info := sampler.Next(nil)
	plan, err := optim.PlanBatch(info, data.Batch{N: len(idx)})
	if err != nil {
		log.Fatal(err)
	}
	sum := make([]float32, 2)
	for _, i := range idx {
		g := []float32{float32(i), 1}
		if _, err := optim.ClipL2(g, clip); err != nil {
			log.Fatal(err)
		}
		sum[0], sum[1] = sum[0]+g[0], sum[1]+g[1]
	}
	if !noise.AddGaussianScaled(sum, sigma*clip, 1/plan.Norm) {
		log.Fatal(optim.ErrNotFinite)
	}
	params := []float32{0.5, -0.5}
	sgd, err := optim.NewSGD(0)
	if err != nil {
		log.Fatal(err)
	}
	sgd.Apply(params, sum, lr)
	rec := plan.Record(clip, sigma*clip, lr)
	fmt.Printf("batch of %d, divided by %g\n", len(idx), plan.Norm)
	fmt.Printf("params: [%.3f %.3f]\n", params[0], params[1])
	fmt.Printf("record: %s %s %s, σ = %g, q = %g\n", rec.Mechanism, rec.Sampling, rec.Neighbouring, rec.NoiseMultiplier, rec.SampleRate)
	// Output:
	// batch of 2, divided by 4
	// params: [0.502 -0.512]
	// record: gaussian poisson add-remove, σ = 1.1, q = 0.04
}

// ClipL2 scales a per-example gradient down to the clip norm and leaves a smaller one as it
// is.
func ExampleClipL2() {
	for _, g := range [][]float32{{3, 4}, {0.3, 0.4}} {
		clipped, err := optim.ClipL2(g, 1)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("clipped %t: [%.3f %.3f], norm %.3f\n", clipped, g[0], g[1], optim.Norm2(g))
	}
	// Output:
	// clipped true: [0.600 0.800], norm 1.000
	// clipped false: [0.300 0.400], norm 0.500
}
