package modelmix_test

import (
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/dptrain/dptrain/algorithm/modelmix"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
)

// Three steps of DP-SGD with ModelMix (Xiao, Wan & Devadas, "Differentially Private Deep
// Learning with ModelMix", Algorithm 1) on a small tanh MLP over the synthetic Gaussian
// mixture (4800 examples, 20 features, 5 classes): each step starts from a random point of the
// box between the last two iterates, widened to τ = κ·η with κ = 2, and clips each example's
// gradient to l2 norm c = 1 and then every coordinate to c/√p with p = 4 (Algorithm 2). Each
// record carries the mixing width L = τ·n·q/η and p, which the modelmix accountant reads. The
// seeded noise stream makes the output reproducible and the steps NOT private: a run that is
// released draws its noise from optim.NewNoise.
func Example() {
	ds, err := data.Synthetic(data.SyntheticMixture, 1)
	if err != nil {
		log.Fatal(err)
	}
	spec := models.Spec{Kind: "mlp", Input: ds.Shape, Classes: ds.Classes, Hidden: []int{16}, Activation: "tanh"}
	nw, err := models.New(spec, rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		log.Fatal(err)
	}
	noise := optim.NewSeededNoise(11)
	o, err := modelmix.New(modelmix.Config{NoiseMultiplier: 1, ClipNorm: 1, LinfParts: 4, MixRatio: 2,
		Schedule: optim.Constant{Rate: 0.2}}, noise)
	if err != nil {
		log.Fatal(err)
	}
	sampler, err := data.NewSampler(data.SchemePoisson, ds.Train.N, 48, 0, noise.Split().Rand())
	if err != nil {
		log.Fatal(err)
	}
	for range 3 {
		idx, info := sampler.Next(nil)
		// Declare gives the step's record before it runs, without reading the batch: the
		// trainer asks the accountant with it whether the step would overshoot the budget.
		declared, err := o.Declare(info)
		if err != nil {
			log.Fatal(err)
		}
		b := data.Batch{N: len(idx), X: make([]float32, len(idx)*ds.Train.D), Y: make([]int32, len(idx))}
		if err := ds.Train.Gather(idx, b.X, b.Y); err != nil {
			log.Fatal(err)
		}
		res, err := o.Step(nw, b, info)
		if err != nil {
			log.Fatal(err)
		}
		r := res.Records[0]
		fmt.Printf("step %d: %s at q = %g, σ = %g, c = %g, L = %.4g, p = %d; as declared: %t\n",
			o.Steps(), r.Sampling, r.SampleRate, r.NoiseMultiplier, r.Sensitivity, r.MixWidth, r.LinfParts, r == declared[0])
	}
	// Output:
	// step 1: poisson at q = 0.01, σ = 1, c = 1, L = 96, p = 4; as declared: true
	// step 2: poisson at q = 0.01, σ = 1, c = 1, L = 96, p = 4; as declared: true
	// step 3: poisson at q = 0.01, σ = 1, c = 1, L = 96, p = 4; as declared: true
}
