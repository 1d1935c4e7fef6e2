package accounting_test

import (
	"context"
	"fmt"
	"log"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/sgld"
)

// RDPToEpsilon converts a Rényi-DP curve to (ε, δ)-DP at the best order. Here the curve is 100
// full-batch Gaussian steps at noise multiplier σ = 20, ε(α) = 100·α/(2σ²) = α/8, at δ = 1e-5,
// with the conversion of Canonne, Kamath & Steinke ("The Discrete Gaussian for Differential
// Privacy", Proposition 12) and Mironov's classic one ("Rényi Differential Privacy",
// Proposition 3).
func ExampleRDPToEpsilon() {
	var orders, curve []float64
	for alpha := 1.5; alpha <= 256; alpha += 0.5 {
		orders = append(orders, alpha)
		curve = append(curve, alpha/8)
	}
	eps, order, err := accounting.RDPToEpsilon(orders, curve, 1e-5)
	if err != nil {
		log.Fatal(err)
	}
	classic, _, err := accounting.RDPToEpsilonClassic(orders, curve, 1e-5)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("ε = %.3f at order %g; classic: ε = %.3f\n", eps, order, classic)
	// Output:
	// ε = 2.166 at order 9.5; classic: ε = 2.524
}

// CalibrateNoise finds the smallest noise multiplier that keeps a run within a target ε: here
// 100 full-batch Gaussian steps held to ε = 1 at δ = 1e-5, their ε computed from the closed
// form RDP 100·α/(2σ²).
func ExampleCalibrateNoise() {
	orders := []float64{2, 4, 8, 16, 32, 64, 128, 256}
	eps := func(sigma float64) (float64, error) {
		curve := make([]float64, len(orders))
		for i, a := range orders {
			curve[i] = 100 * a / (2 * sigma * sigma)
		}
		e, _, err := accounting.RDPToEpsilon(orders, curve, 1e-5)
		return e, err
	}
	sigma, err := accounting.CalibrateNoise(context.Background(), eps, 1)
	if err != nil {
		log.Fatal(err)
	}
	e, _ := eps(sigma)
	fmt.Printf("σ = %.2f gives ε = %.3f\n", sigma, e)
	// Output:
	// σ = 40.75 gives ε = 1.000
}

// Step.Validate refuses a malformed record before any accountant sees it: a step that released
// its gradient without noise has no finite ε.
func ExampleStep_Validate() {
	s := accounting.Step{Mechanism: accounting.NonPrivate, Sampling: accounting.Poisson, SampleRate: 0.01}
	fmt.Println(s.Validate())
	s = accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, NoiseMultiplier: 1.1, SampleRate: 0.01}
	fmt.Println(s.Validate())
	// Output:
	// accounting: step is non-private (released without noise): no finite ε exists for this run
	// <nil>
}

// Describe names the declaration fields of an accountant's refusal as the user writes them:
// here the DP-SGLD bound (a hidden-state bound on the last iterate) refuses a run that
// releases every iterate, and the message names the config key that changes it.
func ExampleDescribe() {
	_, err := sgld.New(accounting.Run{UpdateRule: "sgd", DatasetSize: 60000})
	keys := map[string]string{"Run.LastIterateOnly": "privacy.release: final"}
	fmt.Println(err)
	fmt.Println(accounting.Describe(err, func(field string) string { return keys[field] }))
	// Output:
	// sgld: the bound covers releasing the last iterate only: set Run.LastIterateOnly or use a composition accountant
	// sgld: the bound covers releasing the last iterate only: set privacy.release: final or use a composition accountant
}
