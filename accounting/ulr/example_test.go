package ulr_test

import (
	"fmt"
	"log"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/ulr"
)

// DP-ULR on MNIST (Feng et al., "Forward Learning with Differential Privacy", Theorem 3.6):
// Poisson batches of expected size 200 of 60 000, redrawn while smaller than N_B, and noise
// σ0 = 8, for 25 epochs (7500 steps) at δ = 1e-5. DefaultMinBatchSize picks the largest N_B
// whose rejection term stays below 1e-10 per step; the ulr mode adds that term to the sampled
// Gaussian's RDP, ulr-simplified uses the paper's printed Eq. (10).
func Example() {
	q := 200.0 / 60000
	nb, term, err := ulr.DefaultMinBatchSize(q, 59999, ulr.DefaultRejectionBound)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("N_B = %d, rejection term %.1e per step\n", nb, term)
	step := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.PoissonWithRejection,
		Neighbouring: accounting.AddRemove, NoiseMultiplier: 8, SampleRate: q, Count: 7500,
		DatasetSize: 60000, MinBatchSize: nb}
	for _, build := range []func(accounting.Run) (*ulr.Accountant, error){ulr.New, ulr.NewSimplified} {
		a, err := build(accounting.Run{})
		if err != nil {
			log.Fatal(err)
		}
		if err := a.Compose(step); err != nil {
			log.Fatal(err)
		}
		g, err := a.Epsilon(1e-5)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: ε = %.3f (%s)\n", a.Name(), g.Epsilon, g.Label)
	}
	// Output:
	// N_B = 131, rejection term 9.3e-11 per step
	// ulr: ε = 0.126 (certified)
	// ulr-simplified: ε = 0.264 (certified)
}
