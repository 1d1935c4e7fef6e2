package tuning_test

import (
	"fmt"
	"math"

	"github.com/dptrain/dptrain/accounting/rdp"
	"github.com/dptrain/dptrain/accounting/tuning"
)

// A DP-SGD learning-rate search: each candidate is 1000 steps at sample rate 0.01, and the
// number of candidates is geometric with mean 10. Cost says what the search adds over one run;
// CalibrateSampledGaussian finds the noise that keeps the whole search at ε = 4.
func Example() {
	const q, steps, delta = 0.01, 1000, 1e-5
	gamma, err := tuning.GammaForMean(1, 10) // η = 1: geometric, γ = 0.1
	if err != nil {
		panic(err)
	}
	search := tuning.Geometric(gamma)

	// One candidate's RDP at order λ: the sampled Gaussian composed over the run. NaN, which
	// Cost refuses, stands for an order the analysis fails at.
	candidate := func(order float64) float64 {
		r, err := rdp.SampledGaussian(q, 1.1, order)
		if err != nil {
			return math.NaN()
		}
		return steps * r
	}
	o, err := tuning.Cost(candidate, search, rdp.DefaultOrders(), delta)
	if err != nil {
		panic(err)
	}
	fmt.Printf("one run: ε = %.2f; the search: ε = %.2f (%s)\n", o.Single.Epsilon, o.Search.Epsilon, o.Search.Label)

	sigma, g, err := tuning.CalibrateSampledGaussian(search, q, steps, 4, delta, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("σ = %.3f keeps the search at ε = %.3f\n", sigma, g.Epsilon)
	// Output:
	// one run: ε = 1.71; the search: ε = 3.43 (certified)
	// σ = 1.013 keeps the search at ε = 3.999
}
