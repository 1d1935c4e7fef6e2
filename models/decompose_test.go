package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// clipInPlace scales g to min(1, c/‖g‖)·g with the rounded-down float32 factor.
func clipInPlace(g []float32, c float64) {
	if n := norm2(g); n > c {
		f := ClipFactor(c, n)
		for k := range g {
			g[k] *= f
		}
	}
}

// TestClippingDecomposes is the sensitivity property of per-sample clipping (DESIGN.md, the
// privacy contract; Abadi et al. 2016, Algorithm 1): the clipped sum of a batch equals the sum
// of the examples' individually clipped gradients, each of norm ≤ C, so adding or removing one
// example changes the sum by at most C. It runs over every layer type (tinySpecs: logreg, MLPs,
// conv with max and average pooling, GroupNorm, residual blocks), input scales 1 to 10³, and a
// crafted example (inputs a further 10³ larger, so its logits dwarf the others') at each
// position of the batch, on both clipping paths: ghost clipping (ClippedGradSum, each example
// alone as the reference) and the per-sample path (PerSampleGradSum with the clip applied to
// each materialised g_i, against ReferenceGrad one example at a time).
func TestClippingDecomposes(t *testing.T) {
	const (
		n     = 5
		clip  = 1.0
		craft = 1e3
		tol   = 1e-4 // float32 sums of n vectors of norm ≤ C
	)
	for _, tc := range tinySpecs {
		nw, err := New(tc.spec, rand.New(rand.NewPCG(3, 4)))
		if err != nil {
			t.Fatalf("%s: New: %v", tc.name, err)
		}
		np, d := len(nw.Params()), nw.inDim
		for _, scale := range []float32{1, 10, 100, 1000} {
			for _, pos := range []int{-1, 0, n / 2, n - 1} { // -1: no crafted example
				rng := rand.New(rand.NewPCG(5, uint64(pos+1)))
				b := randomBatch(rng, nw, n)
				for i := range b.X {
					b.X[i] *= scale
					if i/d == pos {
						b.X[i] *= craft
					}
				}
				name := func(path string) string {
					return fmt.Sprintf("%s/%s/scale=%g/pos=%d", tc.name, path, scale, pos)
				}
				// Ghost clipping: batch versus each example alone.
				got := make([]float32, np)
				if _, err := nw.ClippedGradSum(b, clip, got, nil); err != nil {
					t.Fatalf("%s: %v", name("ghost"), err)
				}
				one := make([]float32, np)
				want := make([]float32, np)
				sumClipped(t, name("ghost"), n, clip, one, want, func(i int) error {
					alone := Batch{X: b.X[i*d : (i+1)*d], Y: b.Y[i : i+1], N: 1}
					_, err := nw.ClippedGradSum(alone, clip, one, nil)
					return err
				})
				if e := absErr(got, want); e > tol*n*clip {
					t.Errorf("%s: ‖batch clipped sum − Σ individually clipped‖ = %g", name("ghost"), e)
				}
				// Per-sample path: PerSampleGradSum versus ReferenceGrad one example at a time.
				if _, err := nw.PerSampleGradSum(b, func(_ int, g []float32) { clipInPlace(g, clip) }, got); err != nil {
					t.Fatalf("%s: %v", name("per-sample"), err)
				}
				sumClipped(t, name("per-sample"), n, clip, one, want, func(i int) error {
					_, err := nw.ReferenceGrad(b.X[i*d:(i+1)*d], b.Y[i], one)
					clipInPlace(one, clip)
					return err
				})
				if e := absErr(got, want); e > tol*n*clip {
					t.Errorf("%s: ‖batch clipped sum − Σ individually clipped‖ = %g", name("per-sample"), e)
				}
			}
		}
	}
}

// TestNonFiniteGradientIsAnError: an example whose gradient is not finite fails the step on
// both paths, naming the fix, instead of being scaled by 0.
func TestNonFiniteGradientIsAnError(t *testing.T) {
	for _, tc := range tinySpecs[:3] {
		nw, err := New(tc.spec, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatal(err)
		}
		for _, pos := range []int{0, 2} {
			b := randomBatch(rand.New(rand.NewPCG(9, 9)), nw, 3)
			b.X[pos*nw.inDim] = float32(math.Inf(1))
			grad := make([]float32, len(nw.Params()))
			_, err1 := nw.ClippedGradSum(b, 1, grad, nil)
			_, err2 := nw.PerSampleGradSum(b, nil, grad)
			for path, err := range map[string]error{"ghost": err1, "per-sample": err2} {
				if err == nil || !strings.Contains(err.Error(), "non-finite") || !strings.Contains(err.Error(), "learning_rate") {
					t.Errorf("%s %s: Inf input at sample %d: err = %v, want a non-finite error naming the fix", tc.name, path, pos, err)
				}
			}
		}
	}
}

func TestClipFactorRoundsDown(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for range 10000 {
		c, norm := rng.Float64()*10+1e-3, rng.Float64()*1e4+10
		if f := ClipFactor(c, norm); float64(f) > c/norm {
			t.Fatalf("ClipFactor(%g, %g) = %v > %v", c, norm, f, c/norm)
		}
	}
}

// sumClipped sets want to the sum over i < n of the gradient that grad(i) leaves in one,
// clipped to norm clip, and checks that each has norm ≤ clip.
func sumClipped(t *testing.T, name string, n int, clip float64, one, want []float32, grad func(i int) error) {
	t.Helper()
	clear(want)
	for i := 0; i < n; i++ {
		if err := grad(i); err != nil {
			t.Fatalf("%s: example %d alone: %v", name, i, err)
		}
		if g := norm2(one); g > clip*(1+1e-6) {
			t.Errorf("%s: example %d clipped norm %g > C = %g", name, i, g, clip)
		}
		for k, v := range one {
			want[k] += v
		}
	}
}

// absErr is ‖got − want‖₂.
func absErr(got, want []float32) float64 {
	var d float64
	for i := range want {
		e := float64(got[i]) - float64(want[i])
		d += e * e
	}
	return math.Sqrt(d)
}
