package nmf_test

import (
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/dptrain/dptrain/algorithm/dpmbcd/nmf"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/optim"
)

// Three epochs of private mini-batch non-negative matrix factorisation, DP-MBCD's first case
// study (Chen & Liu, "Hidden State Differential Private Mini-Batch Block Coordinate
// Descent", Appendix B.2.1), of a 200×20 non-negative matrix M of rank 4 plus noise, one
// example per row. Each row's factor x_i stays hidden; only Y is released, after each batch of
// 20 rows of a shuffle-once partition, by a projected gradient step whose per-row gradients
// are clipped to C = 0.5 and noised with σ = 1. The step size η_eff = min(η, κ/ρ²) is public,
// fixed by the bound ρ on the hidden rows. The relative error ‖XY − M‖/‖M‖ falls from the
// random start. The seeded noise stream makes the output reproducible and the run NOT private:
// a run that is released draws its noise from optim.NewNoise.
func Example() {
	ds, _, err := data.NewLowRank(data.LowRankConfig{Rows: 200, Cols: 20, Rank: 4, Noise: 0.01, Seed: 3})
	if err != nil {
		log.Fatal(err)
	}
	cfg := nmf.Config{Rank: 4, Eta: 1, Kappa: 1.1, RowNorm: 1.5, Clip: 0.5, NoiseMultiplier: 1, InnerSteps: 3}
	md, err := nmf.New(cfg, ds.Train.X, ds.Train.N, ds.Train.D, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		log.Fatal(err)
	}
	noise := optim.NewSeededNoise(17)
	sampler, err := data.NewSampler(data.SchemeShuffledOnce, ds.Train.N, 20, 0, noise.Split().Rand())
	if err != nil {
		log.Fatal(err)
	}
	rec := md.Declare(20, 0)
	fmt.Printf("each Y step releases: %s %s, σ = %g, C = %g, b = %d of n = %d, η_eff = %.4f (β = %g)\n",
		rec.Sampling, rec.Neighbouring, rec.NoiseMultiplier, rec.Sensitivity, rec.BatchSize, rec.DatasetSize, rec.StepSize, md.Smoothness())
	_, rel := md.Objective()
	fmt.Printf("start: relative error %.3f\n", rel)
	for epoch := 1; epoch <= 3; epoch++ {
		for range sampler.StepsPerEpoch() {
			rows, info := sampler.Next(nil)
			if _, err := md.Step(rows, info.BatchIndex(), noise); err != nil {
				log.Fatal(err)
			}
		}
		_, rel := md.Objective()
		fmt.Printf("epoch %d: %d Y steps, relative error %.3f\n", epoch, md.Steps(), rel)
	}
	// Output:
	// each Y step releases: shuffled-once replace-one, σ = 1, C = 0.5, b = 20 of n = 200, η_eff = 0.4889 (β = 2.25)
	// start: relative error 0.554
	// epoch 1: 10 Y steps, relative error 0.155
	// epoch 2: 20 Y steps, relative error 0.133
	// epoch 3: 30 Y steps, relative error 0.124
}
