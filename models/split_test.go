package models_test

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/dptrain/dptrain/data"
	. "github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
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
		nw, err := graph.New(Spec{Kind: "cnn-tramer-boneh"}, rng)
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

// TestRunsReuseBuffersSafely checks that the op buffers kept from one run of a tape to the next
// (outBuf) carry nothing over: on each preset with conv or pooling layers, a network that has
// already run on other batches (of the same and of other sizes) gives a clipped sum and norms
// bit-identical to a fresh copy's.
func TestRunsReuseBuffersSafely(t *testing.T) {
	for _, preset := range []string{"cnn-tramer-boneh", "lenet5", "resnet20-gn"} {
		t.Run(preset, func(t *testing.T) {
			n := 24
			if preset == "resnet20-gn" {
				n = 3
			}
			sum := func(nw *Network, b data.Batch) ([]float32, []float64) {
				grad, norms := make([]float32, len(nw.Params())), make([]float64, b.N)
				if _, err := nw.ClippedGradSum(b, 0.5, grad, norms); err != nil {
					t.Fatal(err)
				}
				return grad, norms
			}
			used, err := graph.New(Spec{Kind: preset}, rand.New(rand.NewPCG(3, 4)))
			if err != nil {
				t.Fatal(err)
			}
			fresh, err := graph.New(Spec{Kind: preset}, rand.New(rand.NewPCG(3, 4)))
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			for _, m := range []int{n, n - 1, n} {
				sum(used, randomBatch(rng, used, m))
			}
			b := randomBatch(rng, used, n)
			g1, n1 := sum(used, b)
			g2, n2 := sum(fresh, b)
			if !slices.Equal(g1, g2) || !slices.Equal(n1, n2) {
				t.Error("a network that ran before gives another clipped sum than a fresh one")
			}
		})
	}
}
