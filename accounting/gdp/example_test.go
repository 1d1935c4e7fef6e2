package gdp_test

import (
	"fmt"
	"log"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/gdp"
)

// The central-limit μ of a DP-SGD run, q = 256/60000 and σ = 1.1 for 10 epochs (2344 steps):
// μ = q·√(T·(e^{1/σ²} − 1)) (Dong, Roth & Su, "Gaussian Differential Privacy", Corollary 5.4),
// and the ε it gives at δ = 1e-5 (Corollary 2.13). The CLT is an approximation, not a bound,
// and the guarantee says so in its label.
func Example() {
	a, err := gdp.New(accounting.Run{})
	if err != nil {
		log.Fatal(err)
	}
	err = a.Compose(accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson,
		Neighbouring: accounting.AddRemove, NoiseMultiplier: 1.1, SampleRate: 256.0 / 60000, Count: 2344})
	if err != nil {
		log.Fatal(err)
	}
	g, err := a.Epsilon(1e-5)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("μ = %.3f: ε = %.3f (%s)\n", a.Mu(), g.Epsilon, g.Label)
	// Output:
	// μ = 0.234: ε = 0.862 (approximate)
}

// EpsilonOf and Delta convert between μ-GDP and (ε, δ)-DP: here 100 full-batch Gaussian steps
// at σ = 20, exactly μ = √100/20 = 0.5 (no approximation).
func ExampleEpsilonOf() {
	eps, err := gdp.EpsilonOf(0.5, 1e-5)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("ε = %.3f at δ = 1e-5; δ(ε = 1) = %.2e\n", eps, gdp.Delta(0.5, 1))
	// Output:
	// ε = 1.993 at δ = 1e-5; δ(ε = 1) = 6.83e-03
}
