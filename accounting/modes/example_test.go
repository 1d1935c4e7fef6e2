package modes_test

import (
	"fmt"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/modes"
)

// Every mode side by side for one DP-SGD run: Poisson batches at q = 256/60000, σ = 1.1,
// 10 epochs, plain SGD, every iterate released, δ = 1e-5. The composition accountants give an
// ε; the hidden-state ones (which bound the last iterate only) refuse the run, and ulr refuses
// a step that was not drawn with rejection: a mode whose theorem does not cover the run says
// so and never prints a number.
func Example() {
	run := accounting.Run{UpdateRule: "sgd", DatasetSize: 60000}
	step := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson,
		Neighbouring: accounting.AddRemove, NoiseMultiplier: 1.1, SampleRate: 256.0 / 60000,
		Count: 2344, DatasetSize: 60000}
	for _, name := range modes.Names() {
		a, err := modes.New(name, run)
		if err != nil {
			fmt.Printf("%-19s refuses the run\n", name)
			continue
		}
		if err := a.Compose(step); err != nil {
			fmt.Printf("%-19s refuses the step\n", name)
			continue
		}
		g, err := a.Epsilon(1e-5)
		if err != nil {
			fmt.Printf("%-19s has no ε: %v\n", name, err)
			continue
		}
		fmt.Printf("%-19s ε = %.2f (%s)\n", name, g.Epsilon, g.Label)
	}
	// Output:
	// chien-li            refuses the run
	// gdp                 ε = 0.86 (approximate)
	// mbcd                refuses the run
	// mbcd-certified      refuses the run
	// modelmix            ε = 1.10 (certified)
	// output-perturbation refuses the run
	// pld                 ε = 0.92 (certified)
	// rdp                 ε = 1.10 (certified)
	// sgld                refuses the run
	// sgld-conservative   refuses the run
	// ulr                 refuses the step
	// ulr-simplified      refuses the step
}

// ByRelease sorts modes by what they cover: every iterate (composition), or only the last
// iterate of one trajectory (hidden-state bounds, which need Run.LastIterateOnly).
func ExampleByRelease() {
	every, last := modes.ByRelease([]string{"rdp", "pld", "sgld", "chien-li", "gdp"}, accounting.Run{UpdateRule: "sgd"})
	fmt.Println("every iterate:", every)
	fmt.Println("last iterate only:", last)
	// Output:
	// every iterate: [rdp pld gdp]
	// last iterate only: [sgld chien-li]
}
