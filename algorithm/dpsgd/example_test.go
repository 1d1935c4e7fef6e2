package dpsgd_test

import (
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/dptrain/dptrain/algorithm/dpsgd"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
)

// One DP-SGD step (Abadi et al., "Deep Learning with Differential Privacy", Algorithm 1) on a
// softmax regression over 200 examples of a 20-feature, 5-class Gaussian mixture. The
// network implements the gradient oracle the step reads (optim.GradientOracle): the step
// clips each example's gradient to C = 1, adds N(0, (σC)²) noise with σ = 1.1 to the sum,
// divides by the public q·n = 10 of the Poisson sampler and applies plain SGD at η = 0.5. The
// record is what the accountants read. The seeded noise stream makes the output reproducible
// and the step NOT private: a run that is released draws its noise from optim.NewNoise.
func Example() {
	ds, _, err := data.NewMixture(data.MixtureConfig{Train: 200, Test: 50, Dim: 20, Classes: 5, Separation: 3, Noise: 1, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	nw, err := models.New(models.Spec{Kind: "logreg", Input: []int{20}, Classes: 5}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		log.Fatal(err)
	}
	noise := optim.NewSeededNoise(7)
	sampler, err := data.NewSampler(data.SchemePoisson, ds.Train.N, 10, 0, noise.Split().Rand())
	if err != nil {
		log.Fatal(err)
	}
	idx, info := sampler.Next(nil)
	b := data.Batch{N: len(idx), X: make([]float32, len(idx)*ds.Train.D), Y: make([]int32, len(idx))}
	if err := ds.Train.Gather(idx, b.X, b.Y); err != nil {
		log.Fatal(err)
	}

	o, err := dpsgd.New(dpsgd.Config{NoiseMultiplier: 1.1, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.5}}, noise)
	if err != nil {
		log.Fatal(err)
	}
	res, err := o.Step(nw, b, info)
	if err != nil {
		log.Fatal(err)
	}
	r := res.Records[0]
	fmt.Printf("%d parameters, a batch of %d drawn at q = %g\n", len(nw.Params()), res.Stats.N, info.SampleRate())
	fmt.Printf("record: %s, %s, %s\n", r.Mechanism, r.Sampling, r.Neighbouring)
	fmt.Printf("noise multiplier %g, clip norm %g, noise std %.2f, sample rate %g, step size %g over n = %d\n",
		r.NoiseMultiplier, r.Sensitivity, r.NoiseStd, r.SampleRate, r.StepSize, r.DatasetSize)
	fmt.Printf("clipped %d of %d, mean loss before the step %.2f\n", res.Stats.Clipped, res.Stats.N, res.Stats.Loss/float64(res.Stats.N))
	// Output:
	// 105 parameters, a batch of 12 drawn at q = 0.05
	// record: gaussian, poisson, add-remove
	// noise multiplier 1.1, clip norm 1, noise std 1.10, sample rate 0.05, step size 0.5 over n = 200
	// clipped 12 of 12, mean loss before the step 2.15
}
