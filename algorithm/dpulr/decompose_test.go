package dpulr

import (
	"fmt"
	"math"
	"testing"

	"github.com/dptrain/dptrain/algorithm/internal/steptest"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/layer"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
)

// ulrSpecs are the networks the DP-ULR decomposition runs on: the Table 1 MLP's shape (GELU,
// no activation on the logits) and the ResNet-5 of configs/cifar10-resnet5-dpulr.yaml in
// miniature (conv, max-pool, an identity skip through save/add, dense head).
var ulrSpecs = []struct {
	name string
	spec models.Spec
}{
	{"mlp-gelu", models.Spec{Kind: "mlp", Input: []int{6}, Classes: 3, Hidden: []int{5, 4}, Activation: "gelu"}},
	{"resnet5-mini", models.Spec{Kind: "cnn", Input: []int{2, 6, 6}, Classes: 3, Layers: []models.LayerSpec{
		{Type: "conv2d", Out: 3, Kernel: 3, Stride: 1, Padding: 1}, {Type: "relu"},
		{Type: "maxpool", Kernel: 2, Stride: 2},
		{Type: "conv2d", Out: 4, Kernel: 3, Stride: 1, Padding: 1}, {Type: "relu"},
		{Type: "save"},
		{Type: "conv2d", Out: 4, Kernel: 3, Stride: 1, Padding: 1},
		{Type: "add"}, {Type: "relu"},
		{Type: "flatten"}, {Type: "dense", Out: 3},
	}}},
}

// perExampleULR materialises example d's likelihood-ratio estimate over all layers, laid out
// like the parameters, in float64 and without the clipping kernels: weight Σ_rows ãᵀ s (a
// dense layer's s_d a_dᵀ, a conv layer's S_dᵀP_d summed over output positions), bias Σ_rows s.
func perExampleULR(tr layer.Trace, layers []layerState, d, nparam int) []float64 {
	g := make([]float64, nparam)
	for i, l := range layers {
		geo := l.info.Geometry
		for r := d * geo.Rows; r < (d+1)*geo.Rows; r++ {
			a := tr.Inputs[i][r*geo.In : (r+1)*geo.In]
			s := l.s[r*geo.Out : (r+1)*geo.Out]
			for p, av := range a {
				for c, sv := range s {
					g[l.info.Weight+p*geo.Out+c] += float64(av) * float64(sv)
				}
			}
			if l.info.Bias >= 0 {
				for c, sv := range s {
					g[l.info.Bias+c] += float64(sv)
				}
			}
		}
	}
	return g
}

// TestDPULRClippingDecomposes is the sensitivity property of DP-ULR's release (docs/privacy.md, the
// privacy contract): after the real clean pass, the Eq. 7 controller and the noisy passes on a
// real network, the jointly clipped sum of the batch's likelihood-ratio estimates equals the sum
// of the examples' individually clipped estimates (materialised here without the ghost-clipping
// kernels), each of norm ≤ C. So adding or removing one example moves the sum by at most C
// before the certified mode's N(0, σ0²C²) (and paper mode's top-up). It runs over the MLP and the
// ResNet-5-style CNN with save/add, input scales 1 to 10³, a crafted example (10³ larger again)
// at every position of the batch, and both modes' configurations.
func TestDPULRClippingDecomposes(t *testing.T) {
	const (
		n     = 5
		clip  = 1.0
		craft = 1e3
		tol   = 1e-4 // float32 sums of n vectors of norm ≤ C
	)
	for _, tc := range ulrSpecs {
		nw := steptest.NewNetwork(t, tc.spec, 3)
		np, dim := len(nw.Params()), 1
		for _, s := range nw.InputShape() {
			dim *= s
		}
		for _, certified := range []bool{true, false} {
			for _, scale := range []float32{1, 10, 100, 1000} {
				for pos := -1; pos < n; pos++ { // -1: no crafted example
					name := fmt.Sprintf("%s/certified=%v/scale=%g/pos=%d", tc.name, certified, scale, pos)
					b := steptest.SyntheticBatch(n, dim, optim.NewSeededNoise(uint64(17+pos)))
					for i := range b.Y {
						b.Y[i] %= 3
					}
					for i := range b.X {
						b.X[i] *= scale
						if i/dim == pos {
							b.X[i] *= craft
						}
					}
					if pos >= 0 {
						worstLabel(t, nw, b, pos)
					}
					o, err := New(Config{Copies: 2, NoiseMultiplier: 1, ClipNorm: clip, SigmaFloor: 0.01,
						Certified: certified, Sigma: sigmaIf(certified), Schedule: optim.Constant{Rate: 0.1}}, optim.NewSeededNoise(uint64(pos+2)))
					if err != nil {
						t.Fatal(err)
					}
					tr, layers, err := o.estimates(nw, b)
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					want := make([]float64, np)
					wantClipped := 0
					for d := 0; d < n; d++ {
						g := perExampleULR(tr, layers, d, np)
						var sq float64
						for _, v := range g {
							sq += v * v
						}
						nrm := math.Sqrt(sq)
						f := 1.0
						if nrm > clip {
							wantClipped++
							f = float64(models.ClipFactor(clip, nrm))
						}
						if c := f * nrm; c > clip*(1+1e-6) {
							t.Errorf("%s: example %d clipped norm %g > C = %g", name, d, c, clip)
						}
						if d == pos && nrm <= clip {
							t.Errorf("%s: the crafted example's estimate has norm %g ≤ C: the test does not exercise clipping", name, nrm)
						}
						for k, v := range g {
							want[k] += f * v
						}
					}
					o.grad = make([]float32, np)
					clipped, err := o.clippedSum(tr, layers, n, new(int))
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if clipped != wantClipped {
						t.Errorf("%s: %d examples clipped, want %d", name, clipped, wantClipped)
					}
					var e float64
					for k, v := range want {
						d := float64(o.grad[k]) - v
						e += d * d
					}
					if e = math.Sqrt(e); e > tol*n*clip {
						t.Errorf("%s: ‖batch clipped sum − Σ individually clipped‖ = %g", name, e)
					}
				}
			}
		}
	}
}

// worstLabel gives example pos the label of largest loss, so that the crafted example's
// likelihood-ratio estimate (proportional to its loss) is large rather than exactly 0.
func worstLabel(t *testing.T, nw *models.Network, b data.Batch, pos int) {
	t.Helper()
	best, worst := -1.0, b.Y[pos]
	for y := range int32(nw.Classes()) {
		b.Y[pos] = y
		tr, err := nw.Trace(b)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Loss[pos] > best {
			best, worst = tr.Loss[pos], y
		}
	}
	b.Y[pos] = worst
}

// A non-finite per-example likelihood-ratio estimate (in any layer, at any position) is clipped
// to zero and counted, not an error: the sum equals the one with that example's estimate zero.
func TestDPULRNonFiniteEstimateIsClippedToZero(t *testing.T) {
	const n = 4
	for _, tc := range ulrSpecs {
		nw := steptest.NewNetwork(t, tc.spec, 5)
		dim := 1
		for _, s := range nw.InputShape() {
			dim *= s
		}
		for _, bad := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
			for li := range nw.LinearLayers() {
				for _, pos := range []int{0, n - 1} {
					sum := func(edit func(layers []layerState)) ([]float32, int) {
						b := steptest.SyntheticBatch(n, dim, optim.NewSeededNoise(3))
						for i := range b.Y {
							b.Y[i] %= 3
						}
						o, err := New(Config{Copies: 1, NoiseMultiplier: 1, ClipNorm: 1,
							Certified: true, Sigma: 1, Schedule: optim.Constant{Rate: 0.1}}, optim.NewSeededNoise(4))
						if err != nil {
							t.Fatal(err)
						}
						tr, layers, err := o.estimates(nw, b)
						if err != nil {
							t.Fatal(err)
						}
						edit(layers)
						o.grad = make([]float32, len(nw.Params()))
						nf := 0
						if _, err := o.clippedSum(tr, layers, n, &nf); err != nil {
							t.Fatalf("%s: %v", tc.name, err)
						}
						return o.grad, nf
					}
					got, nf := sum(func(layers []layerState) {
						geo := layers[li].info.Geometry
						layers[li].s[pos*geo.Rows*geo.Out] = bad
					})
					want, _ := sum(func(layers []layerState) {
						for _, l := range layers {
							per := l.info.Geometry.Rows * l.info.Geometry.Out
							clear(l.s[pos*per : (pos+1)*per])
						}
					})
					if nf != 1 {
						t.Errorf("%s: %v in layer %d, example %d: %d counted non-finite, want 1", tc.name, bad, li, pos, nf)
					}
					for k := range got {
						if math.Abs(float64(got[k]-want[k])) > 1e-6*(1+math.Abs(float64(want[k]))) {
							t.Fatalf("%s: %v in layer %d, example %d: coordinate %d is %v, want %v (the example's estimate zeroed)", tc.name, bad, li, pos, k, got[k], want[k])
						}
					}
				}
			}
		}
	}
}
