package compare_test

import (
	"fmt"
	"log"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/compare"
)

// Evaluate composes one run in several modes and reports ε along the way and the best
// certified one: DP-SGD at q = 256/60000, σ = 1.1 for 10 epochs (2344 steps), with ε also after
// 5 epochs, at δ = 1e-5. gdp is only an approximation, so it never becomes "best"; chien-li,
// a bound on the last iterate, does not apply to a run that releases every iterate.
func ExampleEvaluate() {
	step, err := compare.Mechanism{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson,
		Neighbouring: accounting.AddRemove, NoiseMultiplier: 1.1, BatchSize: 256, DatasetSize: 60000}.Step()
	if err != nil {
		log.Fatal(err)
	}
	r, err := compare.Evaluate(compare.Spec{Run: accounting.Run{UpdateRule: "sgd"}, Step: step,
		Steps: 2344, At: []int{1172}, Delta: 1e-5, Modes: []string{"rdp", "pld", "gdp", "chien-li"}})
	if err != nil {
		log.Fatal(err)
	}
	for _, row := range append(r.Modes, *r.Best) {
		if !row.Applicable {
			fmt.Printf("%-10s not applicable\n", row.Mode)
			continue
		}
		fmt.Printf("%-10s %-11s ε@1172 = %.2f, ε@2344 = %.2f\n", row.Mode, row.Label, row.At[0].Epsilon, row.Epsilon)
	}
	fmt.Println("best from:", r.Best.Source)
	// Output:
	// rdp        certified   ε@1172 = 0.91, ε@2344 = 1.10
	// pld        certified   ε@1172 = 0.65, ε@2344 = 0.92
	// gdp        approximate ε@1172 = 0.59, ε@2344 = 0.86
	// chien-li   not applicable
	// best       certified   ε@1172 = 0.65, ε@2344 = 0.92
	// best from: pld
}

// EpsilonEach is "dptrain account": a run told as its sample rate, epochs and δ, accounted in
// every composition mode at once.
func ExampleEpsilonEach() {
	r := compare.Repeated{SampleRate: 0.01, Delta: 1e-5, Epochs: 20, Steps: -1,
		Sampling: "poisson", Mechanism: "gaussian"}
	s, err := r.Step(1.0)
	if err != nil {
		log.Fatal(err)
	}
	outcomes, _ := compare.EpsilonEach(compare.CompositionModes, r.Run(), s, r.Delta, nil)
	for _, o := range outcomes {
		fmt.Printf("%s: ε = %.2f (%s) after %d steps\n", o.Mode, o.Guarantee.Epsilon, o.Guarantee.Label, s.Count)
	}
	// Output:
	// rdp: ε = 2.87 (certified) after 2000 steps
	// pld: ε = 2.58 (certified) after 2000 steps
	// gdp: ε = 2.38 (approximate) after 2000 steps
}
