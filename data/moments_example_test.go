package data_test

import (
	"fmt"
	"log"

	"github.com/dptrain/dptrain/data"
)

// The per-channel statistics of a dataset-wide normalisation: each example's vector of channel
// means (and of mean squares) is clipped to l2 norm 1 before the sums, so one example moves
// each sum by at most 1 and a Gaussian mechanism on them has sensitivity 1. No noise is added
// here: these are the exact sums, and releasing them is not private.
func ExampleSplit_ChannelMoments() {
	// Two examples of 2 channels × 2 values (CHW).
	s := &data.Split{X: []float32{
		1, 3, 0, 0, // channel means (2, 0): norm 2, clipped to (1, 0)
		0, 0, 0.5, 0.5, // channel means (0, 0.5): kept
	}, N: 2, D: 4}
	m, err := s.ChannelMoments(2, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("sums of channel means %.2f, clipped so that each example moves them by at most %g\n", m.Mean, m.Clip)
	mean, _, err := m.Standardization(float64(s.N))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("per-channel mean %.2f\n", mean)
	// Output:
	// sums of channel means [1.00 0.50], clipped so that each example moves them by at most 1
	// per-channel mean [0.50 0.25]
}
