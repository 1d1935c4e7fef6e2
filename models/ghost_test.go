package models_test

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/dptrain/dptrain/data"
	. "github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
)

// randomBatch draws n examples with standard normal inputs and uniform labels.
func randomBatch(rng *rand.Rand, nw *Network, n int) data.Batch {
	b := data.Batch{X: make([]float32, n*nw.InDim()), Y: make([]int32, n), N: n}
	for i := range b.X {
		b.X[i] = float32(rng.NormFloat64())
	}
	for i := range b.Y {
		b.Y[i] = int32(rng.IntN(nw.Classes()))
	}
	return b
}

// relErr is ‖got − want‖₂ / max(‖want‖₂, 1e-12).
func relErr(got, want []float32) float64 {
	var d, w float64
	for i := range want {
		e := float64(got[i]) - float64(want[i])
		d += e * e
		w += float64(want[i]) * float64(want[i])
	}
	return math.Sqrt(d) / math.Max(math.Sqrt(w), 1e-12)
}

func norm2(g []float32) float64 { return math.Sqrt(SumSquares(g)) }

var tinySpecs = []struct {
	name string
	spec Spec
}{
	{"logreg", Spec{Kind: "logreg", Input: []int{6}, Classes: 3}},
	{"logreg-nobias", Spec{Kind: "logreg", Input: []int{6}, Classes: 3, NoBias: true}},
	{"mlp-relu", Spec{Kind: "mlp", Input: []int{5}, Classes: 3, Hidden: []int{4, 3}, Activation: "relu"}},
	{"mlp-tanh", Spec{Kind: "mlp", Input: []int{5}, Classes: 3, Hidden: []int{4, 3}, Activation: "tanh"}},
	{"mlp-gelu", Spec{Kind: "mlp", Input: []int{5}, Classes: 3, Hidden: []int{4}, Activation: "gelu"}},
	{"conv-stride-pad-maxpool", Spec{Kind: "cnn", Input: []int{2, 7, 7}, Classes: 3, Layers: []LayerSpec{
		{Type: "conv2d", Out: 3, Kernel: 3, Stride: 2, Padding: 1}, {Type: "relu"},
		{Type: "maxpool", Kernel: 2, Stride: 1}, {Type: "flatten"}, {Type: "dense", Out: 3}}}},
	{"conv-gram-avgpool", Spec{Kind: "cnn", Input: []int{1, 6, 6}, Classes: 3, Layers: []LayerSpec{
		{Type: "conv2d", Out: 4, Kernel: 5, NoBias: true}, {Type: "tanh"},
		{Type: "avgpool", Kernel: 2}, {Type: "dense", Out: 3}}}},
	{"conv-materialise-groupnorm", Spec{Kind: "cnn", Input: []int{2, 5, 5}, Classes: 3, Layers: []LayerSpec{
		{Type: "conv2d", Out: 4, Kernel: 2}, {Type: "groupnorm", Groups: 2}, {Type: "gelu"},
		{Type: "avgpool", Kernel: 2, Stride: 1}, {Type: "dense", Out: 3}}}},
	{"resblocks-gap", Spec{Kind: "cnn", Input: []int{2, 6, 6}, Classes: 3, Layers: []LayerSpec{
		{Type: "conv2d", Out: 4, Kernel: 3, Padding: 1, NoBias: true}, {Type: "groupnorm", Groups: 2}, {Type: "relu"},
		{Type: "resblock", Out: 4, Groups: 2}, {Type: "resblock", Out: 6, Stride: 2, Groups: 3},
		{Type: "globalavgpool"}, {Type: "dense", Out: 3}}}},
	{"identity-skip", Spec{Kind: "cnn", Input: []int{2, 6, 6}, Classes: 3, Layers: []LayerSpec{
		{Type: "conv2d", Out: 3, Kernel: 3, Padding: 1}, {Type: "relu"}, {Type: "save"},
		{Type: "conv2d", Out: 3, Kernel: 3, Padding: 1}, {Type: "add"}, {Type: "relu"},
		{Type: "maxpool", Kernel: 2}, {Type: "flatten"}, {Type: "dense", Out: 3}}}},
}

// TestClippedGradSumMatchesReference compares the ghost-clipping norms and clipped sums, and
// the materialised per-sample gradients, with gorgonia's own gradient of each sample's loss
// computed one sample at a time (ReferenceGrad), for every layer type, with padded and
// chunked batches.
func TestClippedGradSumMatchesReference(t *testing.T) {
	const tol = 1e-4
	for _, tc := range tinySpecs {
		for _, chunk := range []int{16, 2} { // 16: N=5 pads to a bucket of 6; 2: three chunks
			spec := tc.spec
			spec.Chunk = chunk
			rng := rand.New(rand.NewPCG(1, uint64(chunk)))
			nw, err := graph.New(spec, rng)
			if err != nil {
				t.Fatalf("%s: New: %v", tc.name, err)
			}
			const n = 5
			b := randomBatch(rng, nw, n)
			np := len(nw.Params())
			ref := make([][]float32, n)
			refNorm := make([]float64, n)
			var refLoss float64
			for i := range ref {
				ref[i] = make([]float32, np)
				loss, err := nw.ReferenceGrad(b.X[i*nw.InDim():(i+1)*nw.InDim()], b.Y[i], ref[i])
				if err != nil {
					t.Fatalf("%s: ReferenceGrad: %v", tc.name, err)
				}
				refLoss += loss
				refNorm[i] = norm2(ref[i])
			}
			sorted := append([]float64(nil), refNorm...)
			sort.Float64s(sorted)
			for _, clip := range []float64{math.Inf(1), sorted[1] * 0.9} {
				want := make([]float32, np)
				clipped := 0
				for i, g := range ref {
					c := 1.0
					if refNorm[i] > clip {
						c = clip / refNorm[i]
						clipped++
					}
					for k, v := range g {
						want[k] += float32(c * float64(v))
					}
				}
				grad := make([]float32, np)
				norms := make([]float64, n)
				st, err := nw.ClippedGradSum(b, clip, grad, norms)
				if err != nil {
					t.Fatalf("%s: ClippedGradSum: %v", tc.name, err)
				}
				if e := relErr(grad, want); e > tol {
					t.Errorf("%s chunk %d clip %g: clipped sum relative error %g", tc.name, chunk, clip, e)
				}
				for i := range norms {
					if math.Abs(norms[i]-refNorm[i]) > tol*refNorm[i] {
						t.Errorf("%s chunk %d: norm %d = %g, reference %g", tc.name, chunk, i, norms[i], refNorm[i])
					}
				}
				if st.N != n || st.Clipped != clipped || math.Abs(st.Loss-refLoss) > 1e-4*refLoss {
					t.Errorf("%s chunk %d clip %g: stats %+v, want N=%d Clipped=%d Loss=%g", tc.name, chunk, clip, st, n, clipped, refLoss)
				}
			}
			// PerSampleGradSum: each g_i, and the sum of the transformed g_i (here halved).
			grad := make([]float32, np)
			want := make([]float32, np)
			seen := 0
			_, err = nw.PerSampleGradSum(b, func(i int, g []float32) {
				seen++
				if e := relErr(g, ref[i]); e > tol {
					t.Errorf("%s chunk %d: per-sample gradient %d relative error %g", tc.name, chunk, i, e)
				}
				for k := range g {
					g[k] *= 0.5
				}
			}, grad)
			if err != nil {
				t.Fatalf("%s: PerSampleGradSum: %v", tc.name, err)
			}
			for _, g := range ref {
				for k, v := range g {
					want[k] += 0.5 * v
				}
			}
			if seen != n {
				t.Errorf("%s: f called %d times, want %d", tc.name, seen, n)
			}
			if e := relErr(grad, want); e > tol {
				t.Errorf("%s chunk %d: PerSampleGradSum relative error %g", tc.name, chunk, e)
			}
		}
	}
}

// TestGradientFiniteDifferences checks the batch gradient (ClippedGradSum with clip = +Inf)
// against central differences of the summed loss that Evaluate computes, on every tiny model.
func TestGradientFiniteDifferences(t *testing.T) {
	const (
		h      = 1e-3
		coords = 24
		tol    = 1e-2 // float32 forward pass (rounding ~1e-7/h), relu and max-pool kinks
	)
	for _, tc := range tinySpecs {
		rng := rand.New(rand.NewPCG(7, 7))
		nw, err := graph.New(tc.spec, rng)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		b := randomBatch(rng, nw, 3)
		p := nw.Params()
		grad := make([]float32, len(p))
		if _, err := nw.ClippedGradSum(b, math.Inf(1), grad, nil); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := make([]float32, 0, coords)
		want := make([]float32, 0, coords)
		for c := 0; c < coords; c++ {
			k := rng.IntN(len(p))
			orig := p[k]
			p[k] = orig + h
			up, err1 := nw.Evaluate(b)
			p[k] = orig - h
			down, err2 := nw.Evaluate(b)
			p[k] = orig
			if err1 != nil || err2 != nil {
				t.Fatalf("%s: Evaluate: %v %v", tc.name, err1, err2)
			}
			got = append(got, grad[k])
			want = append(want, float32((up.Loss-down.Loss)/(2*h)))
		}
		if e := relErr(got, want); e > tol {
			t.Errorf("%s: gradient vs finite differences: relative error %g\n got %v\nwant %v", tc.name, e, got, want)
		}
	}
}
