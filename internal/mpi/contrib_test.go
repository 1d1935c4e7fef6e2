package mpi

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
)

// shardedContributions runs PerSampleGradSum and ClippedGradSum on k in-process ranks, each
// with its own copy of a real network (identical parameters), and returns every example's
// gradient and norm as the rank that computed it saw them, and rank 0's clipped sum.
func shardedContributions(t *testing.T, spec models.Spec, k int, b data.Batch, clip float64) ([][]float32, []float64, []float32) {
	t.Helper()
	grads, norms := make([][]float32, b.N), make([]float64, b.N)
	var sum []float32
	var mu sync.Mutex
	cs := Local(k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	for r := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nw, err := models.New(spec, rand.New(rand.NewPCG(31, 32)))
			if err != nil {
				errs[r] = err
				return
			}
			o := &Sharded{Inner: nw, Comm: cs[r]}
			np := len(nw.Params())
			if _, err := o.PerSampleGradSum(b, func(i int, g []float32) {
				mu.Lock()
				grads[i] = append([]float32(nil), g...)
				mu.Unlock()
			}, make([]float32, np)); err != nil {
				errs[r] = err
				return
			}
			g, nm := make([]float32, np), make([]float64, b.N)
			if _, err := o.ClippedGradSum(b, clip, g, nm); err != nil {
				errs[r] = err
				return
			}
			if r == 0 {
				mu.Lock()
				copy(norms, nm)
				sum = g
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return grads, norms, sum
}

// Each example alone, bit for bit, through the data-parallel transport: on a real network at
// its real input size, every example's gradient and norm are the same bits whether one rank
// or several computed the batch (its slot within its rank's share differs with the rank
// count), and the all-reduced clipped sums differ only by the rounding of the ranks' float32
// partial sums, u·(‖S‖ + Σ_r ‖S_r‖) at most with u = 2⁻²⁴, each S_r ≤ its examples' count × C.
func TestShardedContributionsBitIdentical(t *testing.T) {
	const clip, n = 1.0, 70
	spec := models.Spec{Kind: "cnn-tramer-boneh"}
	rng := rand.New(rand.NewPCG(33, 34))
	b := data.Batch{X: make([]float32, n*784), Y: make([]int32, n), N: n}
	for i := range b.X {
		b.X[i] = float32(rng.Float64())
	}
	for i := range b.Y {
		b.Y[i] = int32(rng.IntN(10))
	}
	one, oneNorms, oneSum := shardedContributions(t, spec, 1, b, clip)
	for _, k := range []int{2, 3, 4} {
		grads, norms, sum := shardedContributions(t, spec, k, b, clip)
		for i := range n {
			if math.Float64bits(norms[i]) != math.Float64bits(oneNorms[i]) {
				t.Errorf("%d ranks: example %d's norm %v, one rank %v", k, i, norms[i], oneNorms[i])
			}
			for j := range grads[i] {
				if math.Float32bits(grads[i][j]) != math.Float32bits(one[i][j]) {
					t.Errorf("%d ranks: example %d's gradient differs from one rank's at coordinate %d (%v against %v)", k, i, j, grads[i][j], one[i][j])
					break
				}
			}
		}
		var d2, s2 float64
		for j := range sum {
			e := float64(sum[j]) - float64(oneSum[j])
			d2 += e * e
			s2 += float64(oneSum[j]) * float64(oneSum[j])
		}
		if bound := 0x1p-24 * (math.Sqrt(s2) + float64(n)*clip); math.Sqrt(d2) > bound {
			t.Errorf("%d ranks: ‖S_K − S_1‖ = %.3g·C, above the rounding bound %.3g·C", k, math.Sqrt(d2)/clip, bound/clip)
		} else {
			t.Logf("%d ranks: ‖S_K − S_1‖ = %.3g·C (bound %.3g·C)", k, math.Sqrt(d2)/clip, bound/clip)
		}
	}
}
