package models_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/data"
	. "github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
)

// resumeSpecs: the Table 1 MLP's shape (GELU, flattened image input) and the ResNet-5 of
// configs/cifar10-resnet5-dpulr.yaml in miniature (two saves live across conv layers: one
// around a single conv, one around a conv and a pooling-free block).
var resumeSpecs = []struct {
	name string
	spec Spec
}{
	{"mlp-gelu", Spec{Kind: "mlp", Input: []int{1, 3, 3}, Classes: 4, Hidden: []int{6, 5, 4}, Activation: "gelu"}},
	{"resnet5-mini", Spec{Kind: "cnn", Input: []int{2, 6, 6}, Classes: 3, Layers: []LayerSpec{
		{Type: "conv2d", Out: 3, Kernel: 3, Stride: 1, Padding: 1}, {Type: "relu"},
		{Type: "maxpool", Kernel: 2, Stride: 2},
		{Type: "save"},
		{Type: "conv2d", Out: 3, Kernel: 3, Stride: 1, Padding: 1}, {Type: "relu"},
		{Type: "save"},
		{Type: "conv2d", Out: 3, Kernel: 3, Stride: 1, Padding: 1},
		{Type: "add"}, {Type: "relu"},
		{Type: "add"},
		{Type: "flatten"}, {Type: "dense", Out: 3},
	}}},
}

// A pass resumed from layer l's clean pre-activation output (PerturbedLossesFrom) gives the
// losses of the full perturbed pass with the same noise on layer l alone (PerturbedLosses), up
// to float32 rounding, for every dense/conv layer, in chunks with padded buckets; with no noise
// it gives the clean losses.
func TestPerturbedLossesFromMatchesFullPass(t *testing.T) {
	const n = 5
	for _, tc := range resumeSpecs {
		spec := tc.spec
		spec.Chunk = 2
		rng := rand.New(rand.NewPCG(21, 22))
		nw, err := graph.New(spec, rng)
		if err != nil {
			t.Fatal(err)
		}
		b := randomBatch(rng, nw, n)
		tr, err := nw.Trace(b)
		if err != nil {
			t.Fatal(err)
		}
		lin := nw.LinearLayers()
		full, resumed := make([]float64, n), make([]float64, n)
		for li, l := range lin {
			for _, sigma := range []float32{0, 0.1, 1} {
				name := fmt.Sprintf("%s/%s/σ=%g", tc.name, l.Name, sigma)
				var z []float32
				if sigma > 0 {
					z = make([]float32, n*l.Geometry.Rows*l.Geometry.Out)
					for i := range z {
						z[i] = sigma * float32(rng.NormFloat64())
					}
				}
				noise := make([][]float32, len(lin))
				noise[li] = z
				if err := nw.PerturbedLosses(b, noise, full); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if err := nw.PerturbedLossesFrom(b, tr, li, z, resumed); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				for d := range n {
					if e := math.Abs(full[d] - resumed[d]); e > 1e-5*(1+math.Abs(full[d])) {
						t.Errorf("%s: example %d: resumed loss %v, full pass %v", name, d, resumed[d], full[d])
					}
					if sigma == 0 && math.Abs(resumed[d]-tr.Loss[d]) > 1e-5*(1+tr.Loss[d]) {
						t.Errorf("%s: example %d: resumed without noise %v, clean %v", name, d, resumed[d], tr.Loss[d])
					}
				}
			}
		}
		if err := nw.PerturbedLossesFrom(data.Batch{X: b.X, Y: b.Y, N: n - 1}, tr, 0, nil, resumed); err == nil || !strings.Contains(err.Error(), "Trace(b)") {
			t.Errorf("%s: trace of another batch: err = %v, want a refusal naming Trace(b)", tc.name, err)
		}
		if err := nw.PerturbedLossesFrom(b, tr, len(lin), nil, resumed); err == nil {
			t.Errorf("%s: layer %d of %d: no error", tc.name, len(lin), len(lin))
		}
	}
}
