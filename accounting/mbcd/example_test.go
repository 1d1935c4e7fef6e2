package mbcd_test

import (
	"fmt"
	"log"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/mbcd"
)

// One released block trained by noisy proximal gradient steps on a fixed (shuffle-once)
// partition of 60 000 examples into 60 batches of 1000 (Chen & Liu, "Hidden State Differential
// Private Mini-Batch Block Coordinate Descent for Multi-convexity Optimization", Theorem 4.6):
// a λ = 0.1 strongly convex, β = 1 smooth block, η = 0.1, clip norm 1 and noise multiplier 4,
// releasing the last iterate only. The certified variant's ε at δ = 1e-5 after 1, 10 and 50
// epochs: the differing example's batch is hit once an epoch, and the steps between contract
// what it leaked.
func Example() {
	a, err := mbcd.NewCertified(accounting.Run{Convexity: accounting.StronglyConvex, StrongConvexity: 0.1,
		Smoothness: 1, HolderExponent: 1, DatasetSize: 60000, UpdateRule: "sgd", LastIterateOnly: true})
	if err != nil {
		log.Fatal(err)
	}
	step := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.ShuffledOnce,
		Neighbouring: accounting.ReplaceOne, NoiseMultiplier: 4, Sensitivity: 1, NoiseStd: 4,
		SampleRate: 1000.0 / 60000, StepSize: 0.1, BatchSize: 1000, DatasetSize: 60000}
	for epoch := 1; epoch <= 50; epoch++ {
		for j := range 60 {
			step.BatchIndex = j
			if err := a.Compose(step); err != nil {
				log.Fatal(err)
			}
		}
		if epoch == 1 || epoch == 10 || epoch == 50 {
			g, err := a.Epsilon(1e-5)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Printf("after epoch %2d: ε = %.3f (%s)\n", epoch, g.Epsilon, g.Label)
		}
	}
	// Output:
	// after epoch  1: ε = 1.854 (certified)
	// after epoch 10: ε = 2.326 (certified)
	// after epoch 50: ε = 2.326 (certified)
}
