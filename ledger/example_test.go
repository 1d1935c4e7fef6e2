package ledger_test

import (
	"fmt"
	"log"
	"os"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/ledger"
)

// A store records each step's releases; reopened later, it gives back every record, and ε can
// be computed from them.
func Example() {
	dir, err := os.MkdirTemp("", "store")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	step := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, Neighbouring: accounting.AddRemove,
		NoiseMultiplier: 1.1, SampleRate: 0.01, Sensitivity: 1, NoiseStd: 1.1}

	s, err := ledger.OpenStore(dir, func(string, ...any) {})
	if err != nil {
		log.Fatal(err)
	}
	for k := 1; k <= 100; k++ {
		if err := s.Append(k, []accounting.Step{step}); err != nil {
			log.Fatal(err)
		}
	}
	s.Close()

	s, err = ledger.OpenStore(dir, func(string, ...any) {})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	fmt.Println(s.Executed(), "steps;", len(s.Records()), "run-length record of", s.Records()[0].Steps(), "steps")
	// Output: 100 steps; 1 run-length record of 100 steps
}
