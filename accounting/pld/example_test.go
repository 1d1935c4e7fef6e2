package pld_test

import (
	"fmt"
	"log"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/pld"
	"github.com/dptrain/dptrain/accounting/rdp"
)

// The same DP-SGD run under the PLD accountant and under RDP: q = 256/60000, σ = 1.1, 10 epochs
// (2344 steps), δ = 1e-5. The PLD accountant convolves the steps' privacy loss distributions
// numerically (Koskela, Jälkö & Honkela 2020, on the pessimistic connect-the-dots grid of
// Doroshenko, Ghazi, Kamath, Kumar & Manurangsi 2022) and gives the tighter upper bound;
// RDP's conversion to (ε, δ) gives some of it away.
func Example() {
	step := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson,
		Neighbouring: accounting.AddRemove, NoiseMultiplier: 1.1, SampleRate: 256.0 / 60000, Count: 2344}
	p, err := pld.New(accounting.Run{})
	if err != nil {
		log.Fatal(err)
	}
	r, err := rdp.New(accounting.Run{})
	if err != nil {
		log.Fatal(err)
	}
	for _, a := range []accounting.Accountant{p, r} {
		if err := a.Compose(step); err != nil {
			log.Fatal(err)
		}
		g, err := a.Epsilon(1e-5)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s: ε = %.2f (%s)\n", a.Name(), g.Epsilon, g.Label)
	}
	// Output:
	// pld: ε = 0.92 (certified)
	// rdp: ε = 1.10 (certified)
}
