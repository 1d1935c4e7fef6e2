package dpsgld_test

import (
	"fmt"
	"log"
	"math"
	"math/rand/v2"

	"github.com/dptrain/dptrain/algorithm/dpsgld"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
)

// DP-SGLD (Ryffel, Bach & Pointcheval, "Differential Privacy Guarantees for Stochastic
// Gradient Langevin Dynamics", Algorithm 1) on an L2-regularised two-class softmax regression
// over 500 examples of 20 features with ‖x‖ ≤ 1 (the synthetic logistic set). SoftmaxConstants
// derives the loss's Lipschitz constant L, smoothness β and the projection radius R from that
// public bound; Init draws θ_0 and each step takes a gradient step on a batch of exactly 25
// examples drawn without replacement, adds Langevin noise √(2η)·σ and projects onto the
// R-ball, with the decreasing step size η_k = 1/(2β + λk/2). The records put the noise in
// units of the gradient sum, from which σ is recovered; only the last iterate may be released.
// The seeded noise stream makes the output reproducible and the run NOT private: a run that is
// released draws its noise from optim.NewNoise.
func Example() {
	ds, _, err := data.NewLogistic(data.LogisticConfig{Train: 500, Test: 100, Dim: 20, Radius: 1, WeightNorm: 8, Seed: 2})
	if err != nil {
		log.Fatal(err)
	}
	const lambda, sigma = 0.1, 0.05
	c, err := dpsgld.SoftmaxConstants(1, ds.Classes, lambda, true)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("L = %.3f, β = %.3f, λ = %g, R = %.3f\n", c.Lipschitz, c.Smoothness, c.StrongConvexity, c.Radius)

	nw, err := models.New(models.Spec{Kind: "logreg", Input: ds.Shape, Classes: ds.Classes}, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		log.Fatal(err)
	}
	noise := optim.NewSeededNoise(3)
	o, err := dpsgld.New(dpsgld.Config{Sigma: sigma, Constants: c, PlannedSteps: 3,
		Schedule: dpsgld.Decreasing{Smoothness: c.Smoothness, StrongConvexity: c.StrongConvexity}}, noise)
	if err != nil {
		log.Fatal(err)
	}
	o.Init(nw.Params())
	sampler, err := data.NewSampler(data.SchemeWithoutReplacement, ds.Train.N, 25, 0, noise.Split().Rand())
	if err != nil {
		log.Fatal(err)
	}
	// Every batch has exactly 25 rows, gathered into the same buffers.
	b := data.Batch{N: 25, X: make([]float32, 25*ds.Train.D), Y: make([]int32, 25)}
	for range 3 {
		idx, info := sampler.Next(nil)
		if err := ds.Train.Gather(idx, b.X, b.Y); err != nil {
			log.Fatal(err)
		}
		res, err := o.Step(nw, b, info)
		if err != nil {
			log.Fatal(err)
		}
		r := res.Records[0]
		fmt.Printf("step %d: η = %.4f, %s %s, batch %d of n = %d, noise multiplier %.2f, σ = %.3f, ‖θ‖ = %.3f\n",
			o.Steps(), r.StepSize, r.Sampling, r.Neighbouring, r.BatchSize, r.DatasetSize, r.NoiseMultiplier,
			r.NoiseStd*math.Sqrt(r.StepSize/2)/float64(r.BatchSize), optim.Norm2(nw.Params()))
	}
	fmt.Println("release the last iterate only:", c.Run(ds.Train.N).LastIterateOnly)
	// Output:
	// L = 2.372, β = 1.100, λ = 0.1, R = 3.723
	// step 1: η = 0.4545, without-replacement replace-one, batch 25 of n = 500, noise multiplier 1.11, σ = 0.050, ‖θ‖ = 1.366
	// step 2: η = 0.4444, without-replacement replace-one, batch 25 of n = 500, noise multiplier 1.12, σ = 0.050, ‖θ‖ = 1.365
	// step 3: η = 0.4348, without-replacement replace-one, batch 25 of n = 500, noise multiplier 1.13, σ = 0.050, ‖θ‖ = 1.324
	// release the last iterate only: true
}
