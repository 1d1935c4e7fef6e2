package sgld_test

import (
	"fmt"
	"log"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/sgld"
)

// DP-SGLD on a strongly convex problem releases only its last iterate, and its ε stops growing
// (Ryffel, Bach & Pointcheval, "Differential Privacy Guarantees for Stochastic Gradient
// Langevin Dynamics", Theorem 3.1). Softmax regression over 10 classes on 60 000 feature
// vectors clipped to norm 1, with λ = 0.01; batches of 256 drawn without replacement, η = 0.5,
// Langevin σ = 0.5, for 1 and 10 epochs, at δ = 1e-5, under the certified per-batch variant; the
// limit is the ε of any number of further steps.
func Example() {
	run, err := sgld.SoftmaxRegression(1, 10, 0.01, true, 60000)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("L = %.3f, β = %.2f, diameter %.2f\n", run.Lipschitz, run.Smoothness, run.DomainDiameter)
	step, err := sgld.DeclareStep(0.5, 0.5, run.Lipschitz, 256, 60000, accounting.WithoutReplacement)
	if err != nil {
		log.Fatal(err)
	}
	a, err := sgld.NewConservative(run)
	if err != nil {
		log.Fatal(err)
	}
	for _, epochs := range []int{1, 10} {
		step.Count = epochs*235 - a.Steps() // 235 steps an epoch
		if err := a.Compose(step); err != nil {
			log.Fatal(err)
		}
		g, err := a.Epsilon(1e-5)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s after %4d steps: ε = %.3f (%s)\n", a.Name(), a.Steps(), g.Epsilon, g.Label)
	}
	lim, err := a.EpsilonLimit(1e-5)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("any number of steps: ε = %.3f\n", lim.Epsilon)
	// Output:
	// L = 2.215, β = 1.01, diameter 42.92
	// sgld-conservative after  235 steps: ε = 1.080 (certified)
	// sgld-conservative after 2350 steps: ε = 2.111 (certified)
	// any number of steps: ε = 2.115
}
