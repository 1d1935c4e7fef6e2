package models_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dptrain/dptrain/data"
	. "github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
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
		nw, err := graph.New(tc.spec, rand.New(rand.NewPCG(3, 4)))
		if err != nil {
			t.Fatalf("%s: New: %v", tc.name, err)
		}
		np, d := len(nw.Params()), nw.InDim()
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
					alone := data.Batch{X: b.X[i*d : (i+1)*d], Y: b.Y[i : i+1], N: 1}
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

// withoutExample returns b with example i removed.
func withoutExample(nw *Network, b data.Batch, i int) data.Batch {
	d := nw.InDim()
	return data.Batch{X: append(slices.Clone(b.X[:i*d]), b.X[(i+1)*d:b.N*d]...),
		Y: append(slices.Clone(b.Y[:i]), b.Y[i+1:b.N]...), N: b.N - 1}
}

// TestNonFiniteExampleIsClippedToZero: an example whose gradient is not finite (an Inf or NaN
// input) is clipped to zero on both paths and both engines, counted in Stats.NonFinite, and
// not an error: the clipped sum equals the sum over the other examples, so removing it moves
// the sum by 0 ≤ C, and whether the step runs does not depend on it.
func TestNonFiniteExampleIsClippedToZero(t *testing.T) {
	for _, tc := range tinySpecs {
		for _, engine := range []string{"auto", "graph"} {
			spec := tc.spec
			spec.Engine = engine
			nw, err := graph.New(spec, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			np := len(nw.Params())
			for _, bad := range []float32{float32(math.Inf(1)), float32(math.NaN())} {
				for _, pos := range []int{0, 2} {
					name := fmt.Sprintf("%s/%s/%v at %d", tc.name, nw.Engine(), bad, pos)
					b := randomBatch(rand.New(rand.NewPCG(9, 9)), nw, 3)
					b.X[pos*nw.InDim()] = bad
					rest := withoutExample(nw, b, pos)
					got, want := make([]float32, np), make([]float32, np)
					norms := make([]float64, 3)
					st, err := nw.ClippedGradSum(b, 1, got, norms)
					if err != nil || st.NonFinite != 1 || st.N != 3 {
						t.Errorf("%s: ClippedGradSum: NonFinite %d of %d, err %v; want 1 of 3, no error", name, st.NonFinite, st.N, err)
					}
					if _, err := nw.ClippedGradSum(rest, 1, want, nil); err != nil {
						t.Fatal(err)
					}
					if e := absErr(got, want); !(e <= 1e-6) {
						t.Errorf("%s: clipped sum differs from the sum without the example by %g", name, e)
					}
					if !math.IsNaN(norms[pos]) && !math.IsInf(norms[pos], 0) {
						t.Errorf("%s: norm %g reported for the non-finite example", name, norms[pos])
					}
					st, err = nw.PerSampleGradSum(b, func(_ int, g []float32) { clipInPlace(g, 1) }, got)
					if err != nil || st.NonFinite != 1 {
						t.Errorf("%s: PerSampleGradSum: NonFinite %d, err %v; want 1, no error", name, st.NonFinite, err)
					}
					if _, err := nw.PerSampleGradSum(rest, func(_ int, g []float32) { clipInPlace(g, 1) }, want); err != nil {
						t.Fatal(err)
					}
					if e := absErr(got, want); !(e <= 1e-6) {
						t.Errorf("%s: per-sample sum differs from the sum without the example by %g", name, e)
					}
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
