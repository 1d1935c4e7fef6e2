package lifted_test

import (
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models/lifted"
)

// The lifted form of a bias-free ReLU MLP 20–8–5 (Chen & Liu, "Hidden State Differential
// Private Mini-Batch Block Coordinate Descent", Appendix B.2.2) on a batch of 30 examples of a
// 20-feature, 5-class Gaussian mixture. Update minimises the hidden auxiliaries (each example's
// pre- and post-activations) exactly with the released weights fixed, which lowers the
// objective F of Eq. (4), and returns each weight block's sub-problem: its inputs, clipped to
// norm ρ = 1, and its targets. The first visit starts the auxiliaries from a forward pass.
// ClippedBlockGradient then sums a block's per-example gradients clipped to C = 0.1, as a
// private step of DP-MBCD (package algorithm/dpmbcd) would before adding noise.
func Example() {
	ds, _, err := data.NewMixture(data.MixtureConfig{Train: 30, Test: 10, Dim: 20, Classes: 5, Separation: 3, Noise: 1, Seed: 5})
	if err != nil {
		log.Fatal(err)
	}
	m, err := lifted.New(lifted.Config{Sizes: []int{20, 8, 5}, ActivationClip: []float64{1, 1}, DatasetSize: ds.Train.N})
	if err != nil {
		log.Fatal(err)
	}
	// The released weights, one In×Out row-major block each.
	rng := rand.New(rand.NewPCG(1, 2))
	w := make([][]float32, m.Blocks())
	for d := range w {
		in, out := m.Shape(d)
		w[d] = make([]float32, in*out)
		for i := range w[d] {
			w[d][i] = float32(rng.NormFloat64() * 0.3)
		}
		fmt.Printf("block %d: %d×%d, smoothness β = %g\n", d, in, out, m.Smoothness(d))
	}
	idx := make([]int, ds.Train.N)
	for i := range idx {
		idx[i] = i
	}
	b := data.Batch{X: ds.Train.X, Y: ds.Train.Y, N: ds.Train.N, Index: idx}
	before, err := m.Objective(w, b)
	if err != nil {
		log.Fatal(err)
	}
	p, err := m.Update(w, b)
	if err != nil {
		log.Fatal(err)
	}
	after, err := m.Objective(w, b)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("F: %.1f at the forward pass, %.1f after the hidden updates\n", before, after)
	for d := range w {
		in, out := m.Shape(d)
		gw := make([]float32, in*out)
		st, _, err := lifted.ClippedBlockGradient(gw, w[d], p.In[d], p.Target[d], p.N, in, out, 0.1, nil)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("block %d: %d inputs of %d and targets of %d, %d of %d gradients clipped\n",
			d, p.N, len(p.In[d])/p.N, len(p.Target[d])/p.N, st.Clipped, st.N)
	}
	aux, _ := m.State()
	fmt.Println("hidden values kept:", len(aux))
	// Output:
	// block 0: 20×8, smoothness β = 1
	// block 1: 8×5, smoothness β = 1
	// F: 16.7 at the forward pass, 9.8 after the hidden updates
	// block 0: 30 inputs of 20 and targets of 8, 24 of 30 gradients clipped
	// block 1: 30 inputs of 8 and targets of 5, 30 of 30 gradients clipped
	// hidden values kept: 480
}
