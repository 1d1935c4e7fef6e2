package models_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/data"
	. "github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
)

// enginePair builds spec twice with the same parameters: on the direct executor (engine auto)
// and on the gorgonia graph (engine graph).
func enginePair(t *testing.T, spec Spec) (direct, onGraph *Network) {
	t.Helper()
	return enginePairOn(t, spec, "auto")
}

// enginePairOn is enginePair with the direct executor's engine named: auto or dnnl.
func enginePairOn(t *testing.T, spec Spec, engine string) (direct, onGraph *Network) {
	t.Helper()
	spec.Engine = engine
	d, err := graph.New(spec, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	spec.Engine = "graph"
	g, err := graph.New(spec, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	copy(g.Params(), d.Params())
	if g.HasDirect() {
		t.Fatal("engine graph built a direct executor")
	}
	return d, g
}

// directSpecs are the networks the direct executor must run, beyond tinySpecs' supported ones:
// the presets, and a conv stack with several input channels, padding, stride, ReLU and both
// pooling kinds after one another.
var directSpecs = []struct {
	name string
	spec Spec
}{
	{"cnn-tramer-boneh", Spec{Kind: "cnn-tramer-boneh"}},
	{"lenet5", Spec{Kind: "lenet5"}},
	{"scatternet-cnn-fmnist", Spec{Kind: "scatternet-cnn-fmnist"}},
	{"mlp-784-128-64-32-10", Spec{Kind: "mlp-784-128-64-32-10"}},
	{"conv-3ch-relu-pools", Spec{Kind: "cnn", Input: []int{3, 9, 9}, Classes: 4, Layers: []LayerSpec{
		{Type: "conv2d", Out: 5, Kernel: 3, Stride: 1, Padding: 2}, {Type: "relu"},
		{Type: "maxpool", Kernel: 3, Stride: 2}, {Type: "conv2d", Out: 6, Kernel: 2, Stride: 2, Padding: 1},
		{Type: "tanh"}, {Type: "avgpool", Kernel: 2, Stride: 1}, {Type: "flatten"},
		{Type: "dense", Out: 7}, {Type: "relu"}, {Type: "dense", Out: 4}}}},
	// Residual blocks with an identity and a projection shortcut, GroupNorm, global average
	// pooling: the tensors read twice get their gradient from two ops.
	{"resnet-mini", Spec{Kind: "cnn", Input: []int{3, 8, 8}, Classes: 4, Layers: []LayerSpec{
		{Type: "conv2d", Out: 8, Kernel: 3, Padding: 1, NoBias: true}, {Type: "groupnorm", Groups: 2}, {Type: "relu"},
		{Type: "resblock", Out: 8, Groups: 2}, {Type: "resblock", Out: 12, Stride: 2, Groups: 3},
		{Type: "globalavgpool"}, {Type: "dense", Out: 4}}}},
	// ResNet-20's first stage on 32×32 inputs: large enough per sample that it runs in blocks
	// of fewer than DirectBlock samples.
	{"resnet-stage1", resnetStage1},
}

var resnetStage1 = Spec{Kind: "cnn", Input: []int{3, 32, 32}, Classes: 10, Layers: []LayerSpec{
	{Type: "conv2d", Out: 16, Kernel: 3, Padding: 1, NoBias: true}, {Type: "groupnorm", Groups: 4}, {Type: "relu"},
	{Type: "resblock", Out: 16, Groups: 4}, {Type: "globalavgpool"}, {Type: "dense", Out: 10}}}

// TestDirectMatchesGraph checks the direct executor against the gorgonia graph on every layer
// type it runs: clipped and plain gradient sums, per-sample norms, loss, accuracy, clip counts
// and predictions agree to float32 rounding, for batches within one block, across blocks, and
// across chunks, at input scales 1 and 100. Networks it does not run must get no executor.
func TestDirectMatchesGraph(t *testing.T) {
	testMatchesGraph(t, "auto")
	if DNNLBuilt {
		testMatchesGraph(t, "direct") // auto runs conv networks on oneDNN then
	}
}

// testMatchesGraph is TestDirectMatchesGraph on the direct executor as engine (auto or dnnl)
// builds it.
func testMatchesGraph(t *testing.T, engine string) {
	specs := append([]struct {
		name string
		spec Spec
	}{}, directSpecs...)
	for _, tc := range tinySpecs {
		specs = append(specs, tc)
	}
	unsupported := map[string]bool{"mlp-gelu": true, "conv-materialise-groupnorm": true}
	for _, tc := range specs {
		if engine != "auto" && unsupported[tc.name] {
			continue // an engine named explicitly refuses it (TestEngineOption)
		}
		spec := tc.spec
		spec.Chunk = 64
		d, g := enginePairOn(t, spec, engine)
		if (!d.HasDirect()) != unsupported[tc.name] {
			t.Fatalf("%s: direct executor built = %v, want %v", tc.name, d.HasDirect(), !unsupported[tc.name])
		}
		if !d.HasDirect() {
			continue
		}
		np := len(d.Params())
		for _, n := range []int{1, 33, 70} {
			for _, scale := range []float32{1, 100} {
				// At input scale 100 tanh layers saturate, and their derivative 1 − y² loses
				// relative precision to float32 cancellation, differently for each GEMM's
				// summation order (gonum's and OpenBLAS's differ): 1e-3 there, 1e-4 otherwise.
				tol := 1e-4
				if scale > 1 {
					tol = 1e-3
				}
				name := fmt.Sprintf("%s/n=%d/scale=%g", tc.name, n, scale)
				rng := rand.New(rand.NewPCG(uint64(n), 9))
				b := randomBatch(rng, d, n)
				for i := range b.X {
					b.X[i] *= scale
				}
				// A clip between the middle norms: about half the samples are clipped, and
				// none has a norm within rounding of the clip.
				gn := make([]float64, n)
				gg := make([]float32, np)
				if _, err := g.ClippedGradSum(b, math.Inf(1), gg, gn); err != nil {
					t.Fatalf("%s: graph: %v", name, err)
				}
				sorted := slices.Clone(gn)
				slices.Sort(sorted)
				mid := sorted[0] / 2
				if n > 1 {
					mid = (sorted[n/2-1] + sorted[n/2]) / 2
				}
				if mid == 0 {
					mid = 1 // every gradient is zero (dead relus at scale 100)
				}
				dn, dg := make([]float64, n), make([]float32, np)
				for _, clip := range []float64{math.Inf(1), mid} {
					gn := make([]float64, n)
					ds, err := d.ClippedGradSum(b, clip, dg, dn)
					if err != nil {
						t.Fatalf("%s: direct: %v", name, err)
					}
					gs, err := g.ClippedGradSum(b, clip, gg, gn)
					if err != nil {
						t.Fatalf("%s: graph: %v", name, err)
					}
					// Relative to the sum's norm, or to 1e-5 where a confidently classified
					// batch has a gradient of rounding-error size.
					if e := diffNorm(dg, gg) / max(norm2(gg), 1e-5); e > tol {
						t.Errorf("%s clip=%g: gradient sums differ by %.2g relative", name, clip, e)
					}
					for i := range dn {
						if e := math.Abs(dn[i]-gn[i]) / max(gn[i], 1e-5); e > tol {
							t.Errorf("%s clip=%g: norm %d: direct %g, graph %g", name, clip, i, dn[i], gn[i])
							break
						}
					}
					if ds.N != gs.N || ds.Correct != gs.Correct || ds.Clipped != gs.Clipped ||
						math.Abs(ds.Loss-gs.Loss) > tol*max(1, math.Abs(gs.Loss)) {
						t.Errorf("%s clip=%g: stats direct %+v, graph %+v", name, clip, ds, gs)
					}
					// The plain sum without norms takes the path that skips them.
					if math.IsInf(clip, 1) {
						if _, err := d.ClippedGradSum(b, clip, dg, nil); err != nil {
							t.Fatal(err)
						}
						if e := diffNorm(dg, gg) / max(norm2(gg), 1e-5); e > tol {
							t.Errorf("%s: plain gradient sums differ by %.2g relative", name, e)
						}
					}
				}
				// Per-sample gradients: f sees the same g_i (its norm) and transforms it the
				// same way (clipping to mid, by index, so that concurrent calls do not race).
				for _, nw := range []*Network{d, g} {
					seen := make([]float64, n)
					sum := make([]float32, np)
					if _, err := nw.PerSampleGradSum(b, func(i int, gi []float32) {
						seen[i] = norm2(gi)
						clipInPlace(gi, mid)
					}, sum); err != nil {
						t.Fatalf("%s: PerSampleGradSum: %v", name, err)
					}
					if nw == d {
						copy(dg, sum)
						copy(dn, seen)
						continue
					}
					if e := diffNorm(dg, sum) / max(norm2(sum), 1e-5); e > tol {
						t.Errorf("%s: per-sample sums differ by %.2g relative", name, e)
					}
					for i := range seen {
						if e := math.Abs(dn[i]-seen[i]) / max(seen[i], 1e-5); e > tol {
							t.Errorf("%s: per-sample norm %d: direct %g, graph %g", name, i, dn[i], seen[i])
							break
						}
					}
				}
				de, err := d.Evaluate(b)
				if err != nil {
					t.Fatal(err)
				}
				ge, err := g.Evaluate(b)
				if err != nil {
					t.Fatal(err)
				}
				if de.N != ge.N || de.Correct != ge.Correct || math.Abs(de.Loss-ge.Loss) > tol*max(1, math.Abs(ge.Loss)) {
					t.Errorf("%s: Evaluate direct %+v, graph %+v", name, de, ge)
				}
				dp, gp := make([]int32, n), make([]int32, n)
				if err := d.Predict(b, dp); err != nil {
					t.Fatal(err)
				}
				if err := g.Predict(b, gp); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(dp, gp) {
					t.Errorf("%s: predictions differ: direct %v, graph %v", name, dp, gp)
				}
			}
		}
	}
}

// TestDirectBitIdenticalAcrossWorkers checks that the clipped sum, the norms and the loss of a
// batch spanning several blocks and chunks do not depend on the number of goroutines.
func TestDirectBitIdenticalAcrossWorkers(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range directSpecs {
		spec := tc.spec
		spec.Chunk = 96
		d, _ := enginePair(t, spec)
		const n = 150
		b := randomBatch(rand.New(rand.NewPCG(1, 2)), d, n)
		var want []float32
		var wantNorms []float64
		var wantStats data.Stats
		var wantPS []float32
		for _, procs := range []int{1, 2, 3, 8} {
			runtime.GOMAXPROCS(procs)
			got, norms := make([]float32, len(d.Params())), make([]float64, n)
			s, err := d.ClippedGradSum(b, 0.5, got, norms)
			if err != nil {
				t.Fatal(err)
			}
			if want == nil {
				want, wantNorms, wantStats = got, norms, s
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s: GOMAXPROCS=%d: gradient element %d is %v, with one worker %v", tc.name, procs, i, got[i], want[i])
				}
			}
			if !slices.Equal(norms, wantNorms) || s != wantStats {
				t.Fatalf("%s: GOMAXPROCS=%d: norms or stats differ from one worker's", tc.name, procs)
			}
			ps := make([]float32, len(got))
			if _, err := d.PerSampleGradSum(b, func(_ int, g []float32) { clipInPlace(g, 0.5) }, ps); err != nil {
				t.Fatal(err)
			}
			if wantPS == nil {
				wantPS = ps
			} else if !slices.Equal(ps, wantPS) {
				t.Fatalf("%s: GOMAXPROCS=%d: per-sample sum differs from one worker's", tc.name, procs)
			}
		}
	}
}

// TestDirectClippingDecomposesAcrossBlocks is the sensitivity property on the direct executor
// for a batch of several blocks: the clipped sum equals the sum of each example's clipped
// gradient computed alone, each of norm ≤ C, with a crafted example (inputs 10⁴ larger) at the
// start, at both sides of a block boundary and at the end, at input scales 1 and 1000.
func TestDirectClippingDecomposesAcrossBlocks(t *testing.T) {
	for _, spec := range []Spec{{Kind: "cnn-tramer-boneh"}, resnetStage1} {
		testClippingDecomposes(t, spec)
	}
}

func testClippingDecomposes(t *testing.T, spec Spec) {
	const (
		n    = 70
		clip = 1.0
		tol  = 1e-4
	)
	d, _ := enginePair(t, spec)
	np, dim, blk := len(d.Params()), d.InDim(), d.BlockSize()
	if spec.Kind == "cnn" && blk >= DirectBlock {
		t.Fatalf("the ResNet stage runs in blocks of %d, want fewer than %d", blk, DirectBlock)
	}
	for _, scale := range []float32{1, 1000} {
		for _, pos := range []int{0, blk - 1, blk, n - 1} {
			b := randomBatch(rand.New(rand.NewPCG(3, uint64(pos))), d, n)
			for i := range b.X {
				b.X[i] *= scale
				if i/dim == pos {
					b.X[i] *= 1e4
				}
			}
			got := make([]float32, np)
			if _, err := d.ClippedGradSum(b, clip, got, nil); err != nil {
				t.Fatal(err)
			}
			want, one := make([]float32, np), make([]float32, np)
			for i := 0; i < n; i++ {
				bi := data.Batch{X: b.X[i*dim : (i+1)*dim], Y: b.Y[i : i+1], N: 1}
				if _, err := d.ClippedGradSum(bi, clip, one, nil); err != nil {
					t.Fatal(err)
				}
				if nrm := norm2(one); nrm > clip*(1+1e-6) {
					t.Fatalf("scale %g pos %d: example %d's clipped gradient has norm %g > C", scale, pos, i, nrm)
				}
				for k, v := range one {
					want[k] += v
				}
			}
			if e := relErr(got, want); e > tol {
				t.Errorf("scale %g, crafted example at %d: clipped sum differs from the sum of clipped examples by %.2g relative", scale, pos, e)
			}
		}
	}
}

// TestDirectNonFiniteIsClippedToZero checks that a NaN input in a multi-block batch is clipped
// to zero by the clipped sum and the per-sample sum, counted in Stats.NonFinite, and not an
// error: each sum equals the same sum over the batch without that sample (the other samples'
// blocks shift by one, so up to float32 rounding).
func TestDirectNonFiniteIsClippedToZero(t *testing.T) {
	d, _ := enginePair(t, Spec{Kind: "cnn-tramer-boneh"})
	b := randomBatch(rand.New(rand.NewPCG(5, 6)), d, 70)
	b.X[40*d.InDim()+300] = float32(math.NaN())
	rest := withoutExample(d, b, 40)
	np := len(d.Params())
	got, want := make([]float32, np), make([]float32, np)
	st, err := d.ClippedGradSum(b, 1, got, nil)
	if err != nil || st.NonFinite != 1 || st.N != 70 {
		t.Fatalf("NaN in sample 40: NonFinite %d of %d, err %v; want 1 of 70 and no error", st.NonFinite, st.N, err)
	}
	if _, err := d.ClippedGradSum(rest, 1, want, nil); err != nil {
		t.Fatal(err)
	}
	if e := relErr(got, want); !(e <= 1e-5) {
		t.Errorf("clipped sum differs from the sum without sample 40 by %.2g relative", e)
	}
	clip := func(_ int, g []float32) { clipInPlace(g, 1) }
	st, err = d.PerSampleGradSum(b, clip, got)
	if err != nil || st.NonFinite != 1 {
		t.Fatalf("PerSampleGradSum, NaN in sample 40: NonFinite %d, err %v; want 1 and no error", st.NonFinite, err)
	}
	if _, err := d.PerSampleGradSum(rest, clip, want); err != nil {
		t.Fatal(err)
	}
	if e := relErr(got, want); !(e <= 1e-5) {
		t.Errorf("per-sample sum differs from the sum without sample 40 by %.2g relative", e)
	}
}

// TestEngineOption checks the engine setting's errors.
func TestEngineOption(t *testing.T) {
	if _, err := graph.New(Spec{Kind: "mlp", Hidden: []int{8}, Activation: "gelu", Engine: "direct"}, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "engine auto or graph") {
		t.Errorf("engine direct on a gelu network: got %v", err)
	}
	if _, err := graph.New(Spec{Kind: "mlp", Engine: "fast"}, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "auto, direct, dnnl or graph") {
		t.Errorf("unknown engine: got %v", err)
	}
	for _, kind := range []string{"cnn-tramer-boneh", "resnet20-gn"} {
		nw, err := graph.New(Spec{Kind: kind, Engine: "direct"}, rand.New(rand.NewPCG(1, 1)))
		if err != nil || !nw.HasDirect() {
			t.Errorf("engine direct on %s: %v", kind, err)
		}
	}
}

// diffNorm is ‖a − b‖₂.
func diffNorm(a, b []float32) float64 {
	var s float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		s += d * d
	}
	return math.Sqrt(s)
}

// TestPerSampleOverflowIsClippedToZero crafts a sample whose gradient has finite factors but
// an element that overflows float32 (input 10³⁰ times an output gradient of 10²⁰ in the first
// layer's a_i g_iᵀ, with finite activations and logits): both engines clip it to zero on the
// per-sample path (the direct executor through its max|a|·max|g| check rather than a pass over
// the gradient) and count it, and the sum is the other sample's gradient. The clipped sum
// scales G before the product, so there the sample is an ordinary clipped one (its factor
// C/10⁵⁰ rounds to 0).
func TestPerSampleOverflowIsClippedToZero(t *testing.T) {
	spec := Spec{Kind: "mlp", Input: []int{1}, Classes: 2, Hidden: []int{1}, Activation: "relu"}
	d, g := enginePair(t, spec)
	if !d.HasDirect() {
		t.Fatal("no direct executor for a dense MLP")
	}
	for _, nw := range []*Network{d, g} {
		p := nw.Params()
		for _, info := range nw.Layout() {
			w := p[info.Offset : info.Offset+info.Size]
			switch info.Name {
			case "dense0.weight":
				w[0] = 1e-30
			case "dense2.weight":
				w[0], w[1] = 1e20, -1e20
			default:
				clear(w)
			}
		}
		b := data.Batch{X: []float32{1e30, 1e-20}, Y: []int32{1, 0}, N: 2}
		got, want := make([]float32, len(p)), make([]float32, len(p))
		st, err := nw.PerSampleGradSum(b, nil, got)
		if err != nil || st.NonFinite != 1 {
			t.Errorf("engine %s: NonFinite %d, err %v; want 1 and no error", nw.Engine(), st.NonFinite, err)
		}
		if _, err := nw.PerSampleGradSum(withoutExample(nw, b, 0), nil, want); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("engine %s: per-sample sum %v, want the other sample's gradient %v", nw.Engine(), got, want)
		}
		st, err = nw.ClippedGradSum(b, 1, got, nil)
		if err != nil || st.NonFinite != 0 || st.Clipped < 1 {
			t.Errorf("engine %s: ClippedGradSum: %+v, err %v", nw.Engine(), st, err)
		}
		for _, v := range got {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("engine %s: non-finite clipped sum %v", nw.Engine(), got)
			}
		}
	}
}
