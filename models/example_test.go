package models_test

import (
	"fmt"
	"log"
	"math"
	"math/rand/v2"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
)

// New builds a network from a Spec, here a small CNN for 1×8×8 images with 5 classes: a 3×3
// convolution with 4 channels, ReLU, 2×2 max pooling and a dense layer. Its parameters are one
// flat vector, and Layout names the tensors inside it.
func ExampleNew() {
	spec := models.Spec{Kind: "cnn", Input: []int{1, 8, 8}, Classes: 5, Layers: []models.LayerSpec{
		{Type: "conv2d", Out: 4, Kernel: 3, Padding: 1},
		{Type: "relu"},
		{Type: "maxpool", Kernel: 2},
		{Type: "flatten"},
		{Type: "dense", Out: 5},
	}}
	nw, err := models.New(spec, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %d parameters\n", nw.Name(), len(nw.Params()))
	for _, p := range nw.Layout() {
		fmt.Printf("%-14s shape %-10s offset %3d, bias %t\n", p.Name, fmt.Sprint(p.Shape), p.Offset, p.Bias)
	}
	// Output:
	// cnn: 365 parameters
	// conv2d0.weight shape [1 3 3 4]  offset   0, bias false
	// conv2d0.bias   shape [4]        offset  36, bias true
	// dense4.weight  shape [64 5]     offset  40, bias false
	// dense4.bias    shape [5]        offset 360, bias true
}

// ClippedGradSum computes what a DP-SGD step needs from a batch: each example's gradient norm
// ‖g_i‖ and the sum Σ_i min(1, C/‖g_i‖)·g_i, without materialising the per-example gradients
// (ghost clipping). Here an MLP 20–16–5 and 8 examples of a 20-feature, 5-class Gaussian
// mixture, clipped to C = 5: the examples whose norm exceeds 5 are scaled down to it and
// counted as clipped, so the sum's norm is at most 8·5. The loss is summed over the batch.
func ExampleNetwork_ClippedGradSum() {
	ds, _, err := data.NewMixture(data.MixtureConfig{Train: 8, Test: 2, Dim: 20, Classes: 5, Separation: 3, Noise: 1, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	nw, err := models.New(models.Spec{Kind: "mlp", Input: []int{20}, Classes: 5, Hidden: []int{16}, Activation: "relu"},
		rand.New(rand.NewPCG(3, 4)))
	if err != nil {
		log.Fatal(err)
	}
	b := data.Batch{X: ds.Train.X, Y: ds.Train.Y, N: ds.Train.N}
	grad := make([]float32, len(nw.Params()))
	norms := make([]float64, b.N)
	st, err := nw.ClippedGradSum(b, 5, grad, norms)
	if err != nil {
		log.Fatal(err)
	}
	for i, n := range norms {
		fmt.Printf("example %d (class %d): ‖g‖ = %.1f\n", i, b.Y[i], n)
	}
	fmt.Printf("clipped %d of %d, ‖Σ clipped g‖ = %.1f, loss %.1f\n", st.Clipped, st.N, math.Sqrt(models.SumSquares(grad)), st.Loss)
	// Output:
	// example 0 (class 0): ‖g‖ = 10.9
	// example 1 (class 4): ‖g‖ = 4.3
	// example 2 (class 2): ‖g‖ = 7.3
	// example 3 (class 1): ‖g‖ = 3.1
	// example 4 (class 1): ‖g‖ = 3.1
	// example 5 (class 0): ‖g‖ = 5.7
	// example 6 (class 4): ‖g‖ = 3.0
	// example 7 (class 3): ‖g‖ = 4.3
	// clipped 3 of 8, ‖Σ clipped g‖ = 11.6, loss 15.0
}
