package dpulr_test

import (
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/dptrain/dptrain/algorithm/dpulr"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
	"github.com/dptrain/dptrain/optim"
)

// One DP-ULR step (Feng et al., "Forward Learning with Differential Privacy", Algorithm 1) in
// each mode on the same batch, for a gelu MLP on the synthetic Gaussian mixture (4800
// examples, 20 features, 5 classes). DP-ULR computes no gradient: it perturbs each layer's
// pre-activation output with public noise σ_l = 1 in K = 4 forward passes per example,
// estimates each example's gradient from the losses by likelihood ratios, clips the estimates
// to C = 1 jointly over the layers and divides their sum by the rejection threshold N_B = 20
// of a Poisson batch at q = 0.005. The network comes from graph.New, since the forward-only
// passes (Trace, PerturbedLosses) run on the graph engine. The paper mode tops the estimator's
// own noise up to σ0²C² in every direction and declares sampled-with-rejection Gaussian
// records; the certified mode adds explicit N(0, σ0²C²) noise, accounted like DP-SGD. The
// seeded noise stream makes the output reproducible and the steps NOT private: a run that is
// released draws its noise from optim.NewNoise.
func Example() {
	ds, err := data.Synthetic(data.SyntheticMixture, 4)
	if err != nil {
		log.Fatal(err)
	}
	noise := optim.NewSeededNoise(5)
	sampler, err := data.NewSampler(data.SchemePoissonWithRejection, ds.Train.N, 24, 20, noise.Split().Rand())
	if err != nil {
		log.Fatal(err)
	}
	idx, info := sampler.Next(nil)
	x, y := make([]float32, len(idx)*ds.Train.D), make([]int32, len(idx))
	if err := ds.Train.Gather(idx, x, y); err != nil {
		log.Fatal(err)
	}
	b := data.Batch{X: x, Y: y, N: len(idx)}
	spec := models.Spec{Kind: "mlp", Input: ds.Shape, Classes: ds.Classes, Hidden: []int{8}, Activation: "gelu"}
	for _, certified := range []bool{false, true} {
		nw, err := graph.New(spec, rand.New(rand.NewPCG(7, 8)))
		if err != nil {
			log.Fatal(err)
		}
		o, err := dpulr.New(dpulr.Config{Copies: 4, NoiseMultiplier: 1, ClipNorm: 1, Sigma: 1, Certified: certified,
			Schedule: optim.Constant{Rate: 0.1}}, noise)
		if err != nil {
			log.Fatal(err)
		}
		res, err := o.Step(nw, b, info)
		if err != nil {
			log.Fatal(err)
		}
		r := res.Records[0]
		mode := "paper"
		if certified {
			mode = "certified"
		}
		fmt.Printf("%s: %d layers perturbed, batch of %d, record %s, %s at q = %g, N_B = %d, σ0 = %g, C = %g\n",
			mode, len(nw.LinearLayers()), res.Stats.N, r.Mechanism, r.Sampling, r.SampleRate, r.MinBatchSize,
			r.NoiseMultiplier, r.Sensitivity)
	}
	// Output:
	// paper: 2 layers perturbed, batch of 23, record sampled-with-rejection-gaussian, poisson-with-rejection at q = 0.005, N_B = 20, σ0 = 1, C = 1
	// certified: 2 layers perturbed, batch of 23, record gaussian, poisson-with-rejection at q = 0.005, N_B = 20, σ0 = 1, C = 1
}
