package rdp_test

import (
	"fmt"
	"log"
	"math"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/rdp"
)

// The ε of a DP-SGD run on MNIST: Poisson batches of 256 of the 60 000 examples (q = 256/60000),
// noise multiplier σ = 1.1, 10 epochs, at δ = 1e-5. One record stands for every step; the
// accountant adds the sampled Gaussian's RDP curve (Mironov, Talwar & Zhang, "Rényi
// Differential Privacy of the Sampled Gaussian Mechanism") over the steps and converts it at
// the best order by Canonne, Kamath & Steinke's conversion; Curve gives the composed curve,
// here converted by Mironov's classic one for comparison with older reports.
func Example() {
	q := 256.0 / 60000
	a, err := rdp.New(accounting.Run{})
	if err != nil {
		log.Fatal(err)
	}
	err = a.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson,
		Neighbouring: accounting.AddRemove, NoiseMultiplier: 1.1, SampleRate: q, Count: int(math.Ceil(10 / q))})
	if err != nil {
		log.Fatal(err)
	}
	g, err := a.Epsilon(1e-5)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d steps: ε = %.3f at order %g (%s)\n", a.Steps(), g.Epsilon, g.Order, g.Label)
	orders, curve := a.Curve()
	classic, order, err := accounting.RDPToEpsilonClassic(orders, curve, 1e-5)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("classic conversion: ε = %.3f at order %g\n", classic, order)
	// Output:
	// 2344 steps: ε = 1.098 at order 12.25 (certified)
	// classic conversion: ε = 1.406 at order 12.25
}

// SampledGaussian is one step's RDP at an order α: it grows with α, and at q = 1 it is the
// Gaussian mechanism's α/(2σ²).
func ExampleSampledGaussian() {
	for _, alpha := range []float64{2, 8, 32} {
		sub, err := rdp.SampledGaussian(0.01, 1.1, alpha)
		if err != nil {
			log.Fatal(err)
		}
		full, err := rdp.SampledGaussian(1, 1.1, alpha)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("α = %2g: q = 0.01: %.3g, q = 1: %.3f\n", alpha, sub, full)
	}
	// Output:
	// α =  2: q = 0.01: 0.000129, q = 1: 0.826
	// α =  8: q = 0.01: 0.000584, q = 1: 3.306
	// α = 32: q = 0.01: 8.47, q = 1: 13.223
}
