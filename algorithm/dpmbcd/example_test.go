package dpmbcd_test

import (
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/dptrain/dptrain/algorithm/dpmbcd"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/lifted"
	"github.com/dptrain/dptrain/optim"
)

// Two DP-MBCD steps (Chen & Liu, "Hidden State Differential Private Mini-Batch Block
// Coordinate Descent", Algorithm 4) on a bias-free ReLU MLP 20–8–5 over 300 examples of a
// 5-class Gaussian mixture. The network's two weight matrices are the released blocks; the
// lifted network of package models/lifted keeps each example's hidden pre- and
// post-activations, keyed by Batch.Index and minimised exactly, never released. Every step
// clips each block's per-example gradient to C = 1, adds N(0, (σC)²) noise with σ = 2 to the
// sum and takes a proximal step at η = 0.1 on the batch mean, releasing one record per block,
// with the block's smoothness β_d = ρ_d² (ρ = 1 here), on the batches of a shuffle-once
// partition. The hidden state holds u_0 and x_1 (8 values each) for all 300 examples, of
// which the two batches visited 60. The seeded noise stream makes the output reproducible and the steps NOT private:
// a run that is released draws its noise from optim.NewNoise.
func Example() {
	ds, _, err := data.NewMixture(data.MixtureConfig{Train: 300, Test: 60, Dim: 20, Classes: 5, Separation: 3, Noise: 1, Seed: 6})
	if err != nil {
		log.Fatal(err)
	}
	spec := models.Spec{Kind: "mlp", Input: []int{20}, Classes: 5, Hidden: []int{8}, Activation: "relu", NoBias: true}
	nw, err := models.New(spec, rand.New(rand.NewPCG(9, 10)))
	if err != nil {
		log.Fatal(err)
	}
	// The blocks' widths and offsets in the parameter vector, from the network's layout.
	sizes, offsets := []int{20}, []int(nil)
	for _, p := range nw.Layout() {
		sizes, offsets = append(sizes, p.Shape[1]), append(offsets, p.Offset)
	}
	lm, err := lifted.New(lifted.Config{Sizes: sizes, ActivationClip: []float64{1, 1}, DatasetSize: ds.Train.N})
	if err != nil {
		log.Fatal(err)
	}
	noise := optim.NewSeededNoise(13)
	o, err := dpmbcd.New(dpmbcd.Config{Lifted: lm, Offsets: offsets, NoiseMultiplier: 2, ClipNorm: 1,
		Control: dpmbcd.NoiseControl{Kind: "constant"}, Schedule: optim.Constant{Rate: 0.1}}, noise)
	if err != nil {
		log.Fatal(err)
	}
	sampler, err := data.NewSampler(data.SchemeShuffledOnce, ds.Train.N, 30, 0, noise.Split().Rand())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("layer widths", sizes, "block offsets", offsets)
	for range 2 {
		idx, info := sampler.Next(nil)
		b := data.Batch{N: len(idx), X: make([]float32, len(idx)*ds.Train.D), Y: make([]int32, len(idx)), Index: idx}
		if err := ds.Train.Gather(idx, b.X, b.Y); err != nil {
			log.Fatal(err)
		}
		res, err := o.Step(nw, b, info)
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range res.Records {
			off, n := o.BlockSpan(r.Block)
			fmt.Printf("batch %d, block %d (params %d..%d): %s %s, σ = %g, C = %g, η = %g, β = %g\n",
				r.BatchIndex, r.Block, off, off+n, r.Sampling, r.Neighbouring, r.NoiseMultiplier, r.Sensitivity, r.StepSize, r.Smoothness)
		}
	}
	aux, seen := lm.State()
	visited := 0
	for _, v := range seen {
		if v {
			visited++
		}
	}
	fmt.Printf("hidden: %d auxiliary values kept, %d of %d examples visited\n", len(aux), visited, len(seen))
	// Output:
	// layer widths [20 8 5] block offsets [0 160]
	// batch 0, block 0 (params 0..160): shuffled-once replace-one, σ = 2, C = 1, η = 0.1, β = 1
	// batch 0, block 1 (params 160..200): shuffled-once replace-one, σ = 2, C = 1, η = 0.1, β = 1
	// batch 1, block 0 (params 0..160): shuffled-once replace-one, σ = 2, C = 1, η = 0.1, β = 1
	// batch 1, block 1 (params 160..200): shuffled-once replace-one, σ = 2, C = 1, η = 0.1, β = 1
	// hidden: 4800 auxiliary values kept, 60 of 300 examples visited
}
