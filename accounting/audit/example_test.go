package audit_test

import (
	"fmt"
	"log"
	"math/rand/v2"

	"github.com/dptrain/dptrain/accounting/audit"
)

// A one-run audit (Steinke, Nasr & Jagielski, "Privacy Auditing with One (1) Training Run"):
// 1000 canaries, each included with probability 1/2; after training, the auditor's score of a
// canary (here simulated: one standard deviation higher for an included one) ranks them, and
// the guesses on both ends give a lower bound on ε at 95% confidence for δ = 1e-5. Any claimed
// ε below it is refuted.
func ExampleBound() {
	rng := rand.New(rand.NewPCG(1, 2))
	const m = 1000
	scores, included := make([]float64, m), make([]bool, m)
	for i := range scores {
		included[i] = rng.IntN(2) == 1
		scores[i] = rng.NormFloat64()
		if included[i] {
			scores[i]++
		}
	}
	r, err := audit.Bound(scores, included, audit.DefaultCounts(m), 1e-5, 0.95)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("ε ≥ %.2f: %d of %d guesses correct (best of %d guess counts)\n",
		r.Epsilon, r.Best.Correct, r.Best.Made(), r.Bonferroni)
	// Output:
	// ε ≥ 1.78: 94 of 100 guesses correct (best of 6 guess counts)
}

// EpsilonLowerBound is the bound for one fixed guess count: 90 correct guesses out of 100 made
// about 1000 canaries reject every ε below it; 55 correct do not even reject ε = 0, and the
// bound is then 0: the audit shows nothing.
func ExampleEpsilonLowerBound() {
	for _, correct := range []int{90, 55} {
		eps, err := audit.EpsilonLowerBound(1000, 100, correct, 1e-5, 0.95)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%d/100 correct: ε ≥ %.3f\n", correct, eps)
	}
	// Output:
	// 90/100 correct: ε ≥ 1.626
	// 55/100 correct: ε ≥ 0.000
}
