package models

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
)

// TestClippedGradSumSplitInvariant checks that a step's per-sample norms and clipped sum are
// bit-identical whatever the number of goroutines the conv path's ops split the batch over
// (GOMAXPROCS 1, 2 and 3), on cnn-tramer-boneh with a batch large enough to be split.
func TestClippedGradSumSplitInvariant(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var wantGrad []float32
	var wantNorms []float64
	for _, procs := range []int{1, 2, 3} {
		runtime.GOMAXPROCS(procs)
		rng := rand.New(rand.NewPCG(11, 12))
		nw, err := New(Spec{Kind: "cnn-tramer-boneh"}, rng)
		if err != nil {
			t.Fatal(err)
		}
		b := randomBatch(rng, nw, 64)
		grad, norms := make([]float32, len(nw.Params())), make([]float64, b.N)
		if _, err := nw.ClippedGradSum(b, 0.5, grad, norms); err != nil {
			t.Fatal(err)
		}
		if wantGrad == nil {
			wantGrad, wantNorms = grad, norms
			continue
		}
		if !slices.Equal(grad, wantGrad) || !slices.Equal(norms, wantNorms) {
			t.Errorf("GOMAXPROCS %d: clipped sum or norms differ from GOMAXPROCS 1's", procs)
		}
	}
}
