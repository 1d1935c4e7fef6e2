package convergent_test

import (
	"fmt"
	"log"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/accounting/convergent"
	"github.com/dptrain/dptrain/accounting/rdp"
)

// Projected noisy gradient descent on a convex, 1-smooth, 1-Lipschitz loss over 1000 examples,
// kept in a ball of diameter 1, η = 0.5 and parameter noise σ = 0.1 (NoiseStd = σ·n/η = 200 on
// the summed gradient), releasing only the last iterate. Its ε at δ = 1e-5 levels off as the
// steps go on (Chien & Li, "Convergent Privacy Loss of Noisy-SGD without Convexity and
// Smoothness", Theorem 3.1), where composition, which counts every iterate, keeps growing.
func Example() {
	run := accounting.Run{LastIterateOnly: true, UpdateRule: "sgd", DatasetSize: 1000,
		Convexity: accounting.Convex, Lipschitz: 1, Smoothness: 1, DomainDiameter: 1}
	step := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.FullBatch,
		Neighbouring: accounting.ReplaceOne, NoiseMultiplier: 200, Sensitivity: 1, NoiseStd: 200,
		SampleRate: 1, StepSize: 0.5, BatchSize: 1000, DatasetSize: 1000}
	hidden, err := convergent.New(run)
	if err != nil {
		log.Fatal(err)
	}
	composed, err := rdp.New(run)
	if err != nil {
		log.Fatal(err)
	}
	for _, steps := range []int{1000, 10000, 100000} {
		step.Count = steps - composed.Steps()
		for _, a := range []accounting.Accountant{hidden, composed} {
			if err := a.Compose(step); err != nil {
				log.Fatal(err)
			}
		}
		h, err := hidden.Epsilon(1e-5)
		if err != nil {
			log.Fatal(err)
		}
		c, err := composed.Epsilon(1e-5)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("T = %6d: chien-li ε = %5.2f, composition ε = %5.2f\n", steps, h.Epsilon, c.Epsilon)
	}
	fmt.Println(hidden.Theorem(), hidden.Label())
	// Output:
	// T =   1000: chien-li ε =  1.31, composition ε =  1.31
	// T =  10000: chien-li ε =  2.81, composition ε =  4.73
	// T = 100000: chien-li ε =  2.81, composition ε = 19.05
	// chien-li-full-batch certified
}
