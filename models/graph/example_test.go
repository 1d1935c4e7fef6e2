package graph_test

import (
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
)

// New builds a network that runs on the graph engine, which networks with gelu layers need
// (models.New refuses them). Here a gelu MLP 20–16–5, untrained, evaluated once on the 50 test
// examples of a 20-feature, 5-class Gaussian mixture. Evaluate computes the loss, summed over
// the batch, and the number of correct predictions, without gradients; untrained, the network
// is about as good as chance (10 of 50).
func ExampleNew() {
	ds, _, err := data.NewMixture(data.MixtureConfig{Train: 200, Test: 50, Dim: 20, Classes: 5, Separation: 3, Noise: 1, Seed: 2})
	if err != nil {
		log.Fatal(err)
	}
	spec := models.Spec{Kind: "mlp", Input: []int{20}, Classes: 5, Hidden: []int{16}, Activation: "gelu"}
	if _, err := models.New(spec, rand.New(rand.NewPCG(1, 2))); err != nil {
		fmt.Println("models.New refuses gelu")
	}
	nw, err := graph.New(spec, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		log.Fatal(err)
	}
	st, err := nw.Evaluate(data.Batch{X: ds.Test.X, Y: ds.Test.Y, N: ds.Test.N})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s on the %s engine, %d parameters\n", nw.Name(), nw.Engine(), len(nw.Params()))
	fmt.Printf("%d examples: mean loss %.2f, accuracy %d/%d\n", st.N, st.Loss/float64(st.N), st.Correct, st.N)
	// Output:
	// models.New refuses gelu
	// mlp on the graph engine, 421 parameters
	// 50 examples: mean loss 2.72, accuracy 7/50
}
