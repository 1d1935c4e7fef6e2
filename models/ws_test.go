package models_test

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/data"
	. "github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/graph"
	"github.com/dptrain/dptrain/models/internal/core"
)

// wsSpecs are networks with standardised conv weights, each run on both engines: a conv layer
// on the materialising path, one the Gram identity would take without standardisation, and
// GroupNorm with residual blocks, as in De et al.
var wsSpecs = []struct {
	name   string
	spec   Spec
	direct bool
}{
	{"ws-conv-tanh-maxpool", Spec{Kind: "cnn", Input: []int{2, 7, 7}, Classes: 3, WeightStandardization: true, Layers: []LayerSpec{
		{Type: "conv2d", Out: 3, Kernel: 3, Stride: 2, Padding: 1}, {Type: "tanh"},
		{Type: "maxpool", Kernel: 2, Stride: 1}, {Type: "conv2d", Out: 4, Kernel: 2}, {Type: "relu"},
		{Type: "flatten"}, {Type: "dense", Out: 3}}}, true},
	{"ws-conv-gram-avgpool", Spec{Kind: "cnn", Input: []int{1, 6, 6}, Classes: 3, WeightStandardization: true, Layers: []LayerSpec{
		{Type: "conv2d", Out: 4, Kernel: 5, NoBias: true}, {Type: "tanh"},
		{Type: "avgpool", Kernel: 2}, {Type: "dense", Out: 3}}}, true},
	{"ws-resblocks-groupnorm", Spec{Kind: "cnn", Input: []int{2, 6, 6}, Classes: 3, WeightStandardization: true, Layers: []LayerSpec{
		{Type: "conv2d", Out: 4, Kernel: 3, Padding: 1, NoBias: true}, {Type: "groupnorm", Groups: 2}, {Type: "relu"},
		{Type: "resblock", Out: 6, Stride: 2, Groups: 3}, {Type: "globalavgpool"}, {Type: "dense", Out: 3}}}, true},
}

// wsBatch is randomBatch with inputs scaled by scale (standardised weights have unit variance
// per output channel, so a conv output's scale grows with √fan-in; small inputs keep tanh out
// of saturation, where finite differences say little).
func wsBatch(rng *rand.Rand, nw *Network, n int, scale float32) data.Batch {
	b := randomBatch(rng, nw, n)
	for i := range b.X {
		b.X[i] *= scale
	}
	return b
}

// wsNetworks builds the spec on each engine it runs on, with the same parameters.
func wsNetworks(t *testing.T, spec Spec, direct bool) map[string]*Network {
	t.Helper()
	out := map[string]*Network{}
	for _, engine := range []string{"auto", "graph"} {
		spec.Engine = engine
		nw, err := graph.New(spec, rand.New(rand.NewPCG(11, 12)))
		if err != nil {
			t.Fatalf("graph.New(%s): %v", engine, err)
		}
		e := nw.Engine()
		if e == "dnnl" {
			e = "direct" // the direct executor, its convolutions on oneDNN
		}
		out[e] = nw
	}
	if _, ok := out["direct"]; ok != direct {
		t.Fatalf("direct executor built = %v, want %v", ok, direct)
	}
	return out
}

// TestWeightStandardizationFiniteDifferences checks every per-sample gradient of a standardised
// network, on both engines, against central differences of that example's own loss with
// respect to every parameter (the raw weights W, through Ŵ), and the per-sample norms that
// clipping uses against the norm of the finite-difference gradient: the norm is that of the
// gradient with respect to W, not Ŵ.
func TestWeightStandardizationFiniteDifferences(t *testing.T) {
	const (
		h   = 3e-4
		tol = 1e-2 // float32 forward pass (rounding ~1e-7/h), relu and max-pool kinks
	)
	for _, tc := range wsSpecs {
		for engine, nw := range wsNetworks(t, tc.spec, tc.direct) {
			name := tc.name + "/" + engine
			rng := rand.New(rand.NewPCG(3, 4))
			const n = 3
			b := wsBatch(rng, nw, n, 0.3)
			p := nw.Params()
			per := make([][]float32, n)
			if _, err := nw.PerSampleGradSum(b, func(i int, g []float32) { per[i] = append([]float32(nil), g...) }, make([]float32, len(p))); err != nil {
				t.Fatalf("%s: PerSampleGradSum: %v", name, err)
			}
			norms := make([]float64, n)
			if _, err := nw.ClippedGradSum(b, 1e-3, make([]float32, len(p)), norms); err != nil {
				t.Fatalf("%s: ClippedGradSum: %v", name, err)
			}
			for i := 0; i < n; i++ {
				one := data.Batch{X: b.X[i*nw.InDim() : (i+1)*nw.InDim()], Y: b.Y[i : i+1], N: 1}
				fd := make([]float32, len(p))
				for k := range p {
					orig := p[k]
					p[k] = orig + h
					up, err1 := nw.Evaluate(one)
					p[k] = orig - h
					down, err2 := nw.Evaluate(one)
					p[k] = orig
					if err1 != nil || err2 != nil {
						t.Fatalf("%s: Evaluate: %v %v", name, err1, err2)
					}
					fd[k] = float32((up.Loss - down.Loss) / (2 * h))
				}
				if e := relErr(per[i], fd); e > tol {
					t.Errorf("%s: example %d: per-sample gradient vs finite differences: relative error %g\n got %v\nwant %v", name, i, e, per[i], fd)
				}
				if want := norm2(fd); math.Abs(norms[i]-want) > tol*want {
					t.Errorf("%s: example %d: clipping norm %g, finite-difference gradient norm %g", name, i, norms[i], want)
				}
				if math.Abs(norms[i]-norm2(per[i])) > 1e-5*norms[i] {
					t.Errorf("%s: example %d: clipping norm %g, per-sample gradient norm %g", name, i, norms[i], norm2(per[i]))
				}
			}
		}
	}
}

// TestWeightStandardizationMatchesReference checks both engines' clipped sums, norms and
// per-sample gradients against gorgonia's own autodiff through the standardisation op
// (ReferenceGrad), one example at a time, with batches across the direct executor's blocks and
// the chunks; and the direct executor against the graph engine.
func TestWeightStandardizationMatchesReference(t *testing.T) {
	const tol = 1e-4
	for _, tc := range wsSpecs {
		spec := tc.spec
		spec.Chunk = 64
		nets := wsNetworks(t, spec, tc.direct)
		rng := rand.New(rand.NewPCG(5, 6))
		const n = 70
		ref := nets["graph"]
		b := wsBatch(rng, ref, n, 0.5)
		np := len(ref.Params())
		refG := make([][]float32, n)
		refNorm := make([]float64, n)
		for i := range refG {
			refG[i] = make([]float32, np)
			if _, err := ref.ReferenceGrad(b.X[i*ref.InDim():(i+1)*ref.InDim()], b.Y[i], refG[i]); err != nil {
				t.Fatalf("%s: ReferenceGrad: %v", tc.name, err)
			}
			refNorm[i] = norm2(refG[i])
		}
		sums := map[string][]float32{}
		for engine, nw := range nets {
			name := tc.name + "/" + engine
			for _, clip := range []float64{math.Inf(1), refNorm[0] * 0.7, refNorm[1] * 1e-2} {
				want := make([]float32, np)
				for i, g := range refG {
					c := math.Min(1, clip/refNorm[i])
					for k, v := range g {
						want[k] += float32(c * float64(v))
					}
				}
				grad := make([]float32, np)
				norms := make([]float64, n)
				if _, err := nw.ClippedGradSum(b, clip, grad, norms); err != nil {
					t.Fatalf("%s: ClippedGradSum: %v", name, err)
				}
				if e := relErr(grad, want); e > tol {
					t.Errorf("%s clip %g: clipped sum relative error %g against the reference", name, clip, e)
				}
				for i := range norms {
					if math.Abs(norms[i]-refNorm[i]) > tol*refNorm[i] {
						t.Errorf("%s: norm %d = %g, reference %g", name, i, norms[i], refNorm[i])
					}
				}
				if !math.IsInf(clip, 1) {
					sums[engine] = grad
				}
				// The plain gradient (no norms asked for) too.
				if math.IsInf(clip, 1) {
					if _, err := nw.ClippedGradSum(b, clip, grad, nil); err != nil {
						t.Fatalf("%s: ClippedGradSum: %v", name, err)
					}
					if e := relErr(grad, want); e > tol {
						t.Errorf("%s: plain gradient sum relative error %g against the reference", name, e)
					}
				}
			}
			if _, err := nw.PerSampleGradSum(b, func(i int, g []float32) {
				if e := relErr(g, refG[i]); e > tol {
					t.Errorf("%s: per-sample gradient %d relative error %g against the reference", name, i, e)
				}
			}, make([]float32, np)); err != nil {
				t.Fatalf("%s: PerSampleGradSum: %v", name, err)
			}
		}
		if d, ok := sums["direct"]; ok {
			if e := relErr(d, sums["graph"]); e > tol {
				t.Errorf("%s: direct and graph clipped sums differ: relative error %g", tc.name, e)
			}
		}
	}
}

// TestWeightStandardizationNeighbouring: on both engines, removing one example (at the start,
// inside a block, on both sides of a block boundary, at the end, and a crafted example with
// inputs 100 times larger) moves the clipped sum by at most C (×(1 + 1e-5) for float32
// summation), with clipping active for every example.
func TestWeightStandardizationNeighbouring(t *testing.T) {
	const clip = 1e-3
	for _, tc := range wsSpecs {
		for engine, nw := range wsNetworks(t, tc.spec, tc.direct) {
			name := tc.name + "/" + engine
			rng := rand.New(rand.NewPCG(8, 9))
			b := wsBatch(rng, nw, 40, 1)
			for k := 5 * nw.InDim(); k < 6*nw.InDim(); k++ {
				b.X[k] *= 100
			}
			np := len(nw.Params())
			full := make([]float32, np)
			st, err := nw.ClippedGradSum(b, clip, full, nil)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if st.Clipped != b.N {
				t.Fatalf("%s: %d of %d examples clipped; the test needs all", name, st.Clipped, b.N)
			}
			for _, i := range []int{0, 5, 17, 31, 32, 39} {
				grad := make([]float32, np)
				if _, err := nw.ClippedGradSum(withoutExample(nw, b, i), clip, grad, nil); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				var d float64
				for k := range grad {
					e := float64(full[k]) - float64(grad[k])
					d += e * e
				}
				if d = math.Sqrt(d); d > clip*(1+1e-5) {
					t.Errorf("%s: removing example %d moves the clipped sum by %g > C = %g", name, i, d, clip)
				}
			}
		}
	}
}

// TestWeightStandardizationIsApplied: Ŵ does not change when an output channel's weights are
// scaled and shifted, so neither does the loss; without standardisation it does.
func TestWeightStandardizationIsApplied(t *testing.T) {
	for _, ws := range []bool{true, false} {
		spec := wsSpecs[0].spec
		spec.WeightStandardization = ws
		for engine, nw := range wsNetworks(t, spec, true) {
			rng := rand.New(rand.NewPCG(1, 2))
			b := wsBatch(rng, nw, 9, 0.5)
			before, err := nw.Evaluate(b)
			if err != nil {
				t.Fatal(err)
			}
			l := nw.Layout()[0] // the first conv layer's weight, d×k
			k := l.Shape[len(l.Shape)-1]
			for r := 0; r < l.Size/k; r++ {
				w := &nw.Params()[l.Offset+r*k+1] // output channel 1
				*w = 3**w + 0.5
			}
			after, err := nw.Evaluate(b)
			if err != nil {
				t.Fatal(err)
			}
			if same := math.Abs(after.Loss-before.Loss) < 1e-4*before.Loss; same != ws {
				t.Errorf("standardised %v on %s: loss %g after scaling and shifting a channel, %g before", ws, engine, after.Loss, before.Loss)
			}
		}
	}
}

// TestWeightStandardizationSaveLoad: a saved standardised network loads standardised, on the
// same engine, and evaluates the same.
func TestWeightStandardizationSaveLoad(t *testing.T) {
	for _, tc := range wsSpecs {
		nw, err := graph.New(tc.spec, rand.New(rand.NewPCG(2, 3)))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "model.params")
		if err := Save(path, nw); err != nil {
			t.Fatal(err)
		}
		got, err := graph.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Spec().WeightStandardization || got.Engine() != nw.Engine() {
			t.Errorf("%s: loaded spec standardised %v on %s, want true on %s", tc.name, got.Spec().WeightStandardization, got.Engine(), nw.Engine())
		}
		for _, l := range got.LayersWS() {
			if l.WS != l.Conv {
				t.Errorf("%s: loaded layer %s standardised = %v", tc.name, l.Name, l.WS)
			}
		}
		b := wsBatch(rand.New(rand.NewPCG(4, 5)), nw, 7, 1)
		s1, _ := nw.Evaluate(b)
		s2, _ := got.Evaluate(b)
		if s1 != s2 {
			t.Errorf("%s: loaded model evaluates to %+v, saved %+v", tc.name, s2, s1)
		}
	}
}

// TestWeightStandardizationErrors: the setting on a network without conv layers is an error,
// and forward-only estimators refuse a standardised network.
func TestWeightStandardizationErrors(t *testing.T) {
	for _, spec := range []Spec{
		{Kind: "logreg", Input: []int{6}, Classes: 3},
		{Kind: "mlp-784-128-64-32-10"},
		{Kind: "cnn", Input: []int{1, 4, 4}, Classes: 2, Layers: []LayerSpec{{Type: "maxpool", Kernel: 2}, {Type: "dense", Out: 2}}},
	} {
		spec.WeightStandardization = true
		_, err := graph.New(spec, rand.New(rand.NewPCG(1, 1)))
		if err == nil || !strings.Contains(err.Error(), "weight_standardization") || !strings.Contains(err.Error(), "has none") {
			t.Errorf("%s: error %v, want one naming weight_standardization and the missing conv layers", spec.Kind, err)
		}
	}
	nw, err := graph.New(wsSpecs[0].spec, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	b := wsBatch(rand.New(rand.NewPCG(1, 1)), nw, 2, 1)
	if _, err := nw.Trace(b); err == nil || !strings.Contains(err.Error(), "weight_standardization false") {
		t.Errorf("Trace: error %v, want a refusal of standardised weights", err)
	}
	if err := nw.PerturbedLosses(b, make([][]float32, len(nw.LinearLayers())), make([]float64, 2)); err == nil || !strings.Contains(err.Error(), "weight_standardization false") {
		t.Errorf("PerturbedLosses: error %v, want a refusal of standardised weights", err)
	}
	// LinearLayers leaves the standardised conv layers out, so that an estimator checking that
	// they cover every parameter (DP-ULR) refuses the network.
	covered := 0
	for _, l := range nw.LinearLayers() {
		covered += l.Geometry.In * l.Geometry.Out
		if l.Geometry.Bias {
			covered += l.Geometry.Out
		}
	}
	if len(nw.LinearLayers()) != 1 || covered == len(nw.Params()) {
		t.Errorf("LinearLayers of a standardised network: %d layers covering %d of %d parameters, want only the dense layer", len(nw.LinearLayers()), covered, len(nw.Params()))
	}
}

// TestStandardiseBackFiniteDifferences checks the standardisation's Jacobian map on its own,
// for column lengths down to 2 and columns of (nearly) equal weights, where ε dominates: the
// gradient of f(Ŵ(W)) = Σ r ⊙ Ŵ + 0.3·Σ Ŵ³ with respect to W against central differences.
func TestStandardiseBackFiniteDifferences(t *testing.T) {
	for _, tc := range []struct {
		name   string
		d, k   int
		spread float64
	}{{"7x3", 7, 3, 0.2}, {"2x4", 2, 4, 1}, {"50x2", 50, 2, 0.05}, {"near-constant", 9, 2, 1e-3}} {
		rng := rand.New(rand.NewPCG(1, uint64(tc.d)))
		d, k := tc.d, tc.k
		w, r := make([]float64, d*k), make([]float64, d*k)
		for i := range w {
			w[i] = 0.5 + rng.NormFloat64()*tc.spread
			r[i] = rng.NormFloat64()
		}
		// f in float64 from the definition, independently of standardise.
		f := func(w []float64) float64 {
			var s float64
			for o := 0; o < k; o++ {
				var mean, ss float64
				for q := 0; q < d; q++ {
					mean += w[q*k+o]
				}
				mean /= float64(d)
				for q := 0; q < d; q++ {
					ss += (w[q*k+o] - mean) * (w[q*k+o] - mean)
				}
				sd := math.Sqrt(ss/float64(d) + core.WeightStdEpsilon)
				for q := 0; q < d; q++ {
					x := (w[q*k+o] - mean) / sd
					s += r[q*k+o]*x + 0.3*x*x*x
				}
			}
			return s
		}
		w32 := make([]float32, d*k)
		for i, v := range w {
			w32[i] = float32(v)
			w[i] = float64(w32[i])
		}
		hat, inv := make([]float32, d*k), make([]float64, k)
		core.Standardise(w32, hat, inv, make([]float64, k), d, k)
		g := make([]float32, d*k)
		for i := range g {
			g[i] = float32(r[i] + 0.9*float64(hat[i])*float64(hat[i]))
		}
		core.StandardiseBack(g, hat, inv, d, k, nil)
		fd := make([]float32, d*k)
		h := 1e-4 * tc.spread
		for i := range w {
			o := w[i]
			w[i] = o + h
			up := f(w)
			w[i] = o - h
			dn := f(w)
			w[i] = o
			fd[i] = float32((up - dn) / (2 * h))
		}
		if e := relErr(g, fd); e > 1e-4 {
			t.Errorf("%s: Jacobian map vs finite differences: relative error %g\n got %v\nwant %v", tc.name, e, g, fd)
		}
	}
}

// BenchmarkWeightStandardization times ClippedGradSum (the per-example norms and the clipped
// sum: a DP-SGD step but for the noise and the update) of cnn-tramer-boneh, the Fashion-MNIST
// CNN, at batch 256 on the direct executor, without and with standardised conv weights; run
// with -count to interleave the two.
func BenchmarkWeightStandardization(b *testing.B) {
	for _, ws := range []bool{false, true} {
		name := "off"
		if ws {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			nw, err := graph.New(Spec{Kind: "cnn-tramer-boneh", WeightStandardization: ws}, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				b.Fatal(err)
			}
			batch := randomBatch(rand.New(rand.NewPCG(3, 4)), nw, 256)
			grad := make([]float32, len(nw.Params()))
			b.ResetTimer()
			for range b.N {
				if _, err := nw.ClippedGradSum(batch, 0.1, grad, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/step")
		})
	}
}
