package graph

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gonum.org/v1/gonum/floats"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/internal/kernels"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/models/internal/core"
)

// cancelSpecs are a conv layer feeding a dense layer through tanh: on the Gram path (16 output
// positions, patch width 72, 16 channels: 16·(72+16) < 2·72·16), and on the materialising path
// (64 positions, patch width 9, 4 channels; the direct executor keeps the per-sample products).
var cancelSpecs = []struct {
	name string
	spec models.Spec
	gram bool
}{
	{"gram", models.Spec{Kind: "cnn", Input: []int{8, 6, 6}, Classes: 2, Layers: []models.LayerSpec{
		{Type: "conv2d", Out: 16, Kernel: 3}, {Type: "tanh"}, {Type: "flatten"}, {Type: "dense", Out: 2}}}, true},
	{"materialise", models.Spec{Kind: "cnn", Input: []int{1, 10, 10}, Classes: 2, Layers: []models.LayerSpec{
		{Type: "conv2d", Out: 4, Kernel: 3}, {Type: "tanh"}, {Type: "flatten"}, {Type: "dense", Out: 2}}}, false},
}

// setCancelling gives nw the audit's adversarial parameters: conv weights and biases 0 (so the
// conv output is 0 and tanh' = 1 there), and a dense layer whose weights to class 0 alternate
// in sign over the conv's output positions, w_c·s_p·(1 + eps·u_{cp}) with s_p = ±1 in a
// checkerboard and u uniform in [−1, 1), weights to class 1 zero. With a constant input every
// patch P_p is the same, so the conv weight gradient Σ_p P_p G_pᵀ and the bias gradient Σ_p G_p
// cancel down to the eps-sized residue while every Gram entry is of the full size.
func setCancelling(nw *models.Network, conv *core.Layer, rng *rand.Rand, eps float64) {
	p := nw.Params()
	clear(p)
	rows, ow := conv.Rows(), conv.OW
	for _, info := range nw.Layout() {
		if info.Name != "dense3.weight" {
			continue
		}
		w := p[info.Offset : info.Offset+info.Size] // (k·rows)×2, feature (channel, row, column)
		for c := 0; c < conv.K; c++ {
			wc := 0.5 + rng.Float64()
			for pos := 0; pos < rows; pos++ {
				s := 1.0
				if (pos/ow+pos%ow)%2 == 1 {
					s = -1
				}
				w[(c*rows+pos)*2] = float32(wc * s * (1 + eps*(2*rng.Float64()-1)))
			}
		}
	}
}

// exactNorms returns each example's gradient norm computed in float64 from the graph's own
// layer inputs A and output gradients G (dense: ‖a‖²‖g‖² + ‖g‖²; conv: ‖P_iᵀG_i‖² + ‖G_iᵀ1‖²
// with every product and sum in float64).
func exactNorms(t *testing.T, e *engine, b data.Batch) []float64 {
	t.Helper()
	var s data.Stats
	tp, m, err := e.pass(b, 0, modeGhost, &s, nil)
	if err != nil || m != b.N {
		t.Fatalf("exactNorms: pass of %d: %v", m, err)
	}
	sq := make([]float64, m)
	for j := range e.net.Layers {
		l := &e.net.Layers[j]
		r, d, k := l.Rows(), l.D, l.K
		for i := 0; i < m; i++ {
			a, g := tp.a[j][i*r*d:(i+1)*r*d], tp.gz[j][i*r*k:(i+1)*r*k]
			w := make([]float64, d*k)
			bias := make([]float64, k)
			for p := 0; p < r; p++ {
				for u := 0; u < d; u++ {
					for v := 0; v < k; v++ {
						w[u*k+v] += float64(a[p*d+u]) * float64(g[p*k+v])
					}
				}
				for v := 0; v < k; v++ {
					bias[v] += float64(g[p*k+v])
				}
			}
			for _, x := range w {
				sq[i] += x * x
			}
			if l.B >= 0 {
				for _, x := range bias {
					sq[i] += x * x
				}
			}
		}
	}
	for i := range sq {
		sq[i] = math.Sqrt(sq[i])
	}
	return sq
}

// TestGramNormsUnderCancellation is the audit's adversarial construction (cancelling
// per-position conv gradients, constant inputs) with random residues: on both engines, every
// norm ClippedGradSum returns is within 1e-3 relative of the float64 norm of the same example's
// gradient and of the slow path (PerSampleGradSum on a batch of one), never NaN, so every
// clipped contribution c_i·g_i has norm ≤ C·(1 + 1e-5); and removing any one example moves the
// released clipped sum by at most C·(1 + 1e-5).
func TestGramNormsUnderCancellation(t *testing.T) {
	const clip = 1.0
	worst, worstNb := 0.0, 0.0
	for _, tc := range cancelSpecs {
		d, g, e := enginePair(t, tc.spec)
		if d.Engine() == "graph" {
			t.Fatal("no direct executor for the cancelling CNN")
		}
		if l := &e.net.Layers[0]; l.Geometry().UseGram() != tc.gram {
			t.Fatalf("%s: the conv layer's Gram path is %v", tc.name, !tc.gram)
		}
		worst, worstNb = cancelCase(t, tc.name, tc.gram, d, g, e, clip, worst, worstNb)
	}
	t.Logf("worst ‖clipped contribution‖/C: %.9g; worst ‖S(D) − S(D without i)‖/C: %.9g", worst, worstNb)
}

// enginePair builds spec twice with the same parameters: on the direct executor (engine auto)
// and on the graph (engine graph), whose engine it returns too.
func enginePair(t *testing.T, spec models.Spec) (direct, graph *models.Network, e *engine) {
	t.Helper()
	d, err := New(spec, rand.New(rand.NewPCG(7, 8)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	spec.Engine = "graph"
	g, err := models.New(spec, rand.New(rand.NewPCG(7, 8)), models.WithGraph(func(n *core.Net) (models.Graph, error) {
		gr, err := build(n)
		e, _ = gr.(*engine)
		return gr, err
	}))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	copy(g.Params(), d.Params())
	return d, g, e
}

func norm2(g []float32) float64 { return math.Sqrt(kernels.SumSquares(g)) }

// diffNorm is ‖a − b‖₂, in float64.
func diffNorm(a, b []float32) float64 {
	a64, b64 := make([]float64, len(a)), make([]float64, len(b))
	kernels.ToF64(a64, a)
	kernels.ToF64(b64, b)
	return floats.Distance(a64, b64, 2)
}

// cancelCase runs TestGramNormsUnderCancellation's checks on one engine pair and returns the
// worst ratios so far.
func cancelCase(t *testing.T, spec string, gram bool, d, g *models.Network, e *engine, clip, worst, worstNb float64) (float64, float64) {
	dim := core.Prod(d.InputShape())
	for seed := range uint64(6) {
		for _, eps := range []float64{1e-2, 1e-3, 3e-4, 2e-4, 1e-4, 1e-5} {
			rng := rand.New(rand.NewPCG(seed, 17))
			setCancelling(d, &e.net.Layers[0], rng, eps)
			copy(g.Params(), d.Params())
			const n = 9
			b := data.Batch{X: make([]float32, n*dim), Y: make([]int32, n), N: n}
			for i := 0; i < n; i++ {
				x := float32(math.Pow(10, float64(i%5))) * float32(1+rng.Float64()) // 1 to 2·10⁴
				if i%3 == 2 {
					x = -x
				}
				for u := range dim {
					b.X[i*dim+u] = x
				}
				b.Y[i] = int32(rng.IntN(2))
			}
			want := exactNorms(t, e, b)
			for _, nw := range []*models.Network{d, g} {
				name := fmt.Sprintf("%s/%s/seed=%d/eps=%g", spec, nw.Engine(), seed, eps)
				norms := make([]float64, n)
				grad := make([]float32, len(nw.Params()))
				st, err := nw.ClippedGradSum(b, clip, grad, norms)
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				if st.NonFinite != 0 {
					t.Errorf("%s: %d examples counted non-finite, all are finite", name, st.NonFinite)
				}
				// The direct executor keeps a materialising layer's float32 products P_iᵀG_i,
				// takes the norms from them and releases c_i times them (TestDirectClippingDecomposesAcrossBlocks);
				// every other conv norm is float64, never below the exact one.
				// (keepSample: at these sizes, a conv layer off the Gram path, or any conv layer on
				// oneDNN.)
				keep := nw.Engine() != "graph" && (nw.Engine() == "dnnl" || !gram)
				one := make([]float32, len(nw.Params()))
				for i, nrm := range norms {
					bi := data.Batch{X: b.X[i*dim : (i+1)*dim], Y: b.Y[i : i+1], N: 1}
					if _, err := nw.PerSampleGradSum(bi, nil, one); err != nil {
						t.Fatalf("%s: slow path, example %d: %v", name, i, err)
					}
					// The slow path's float32 P_iᵀG_i is itself off by up to u·r·Σ_p‖P_p‖‖G_p‖
					// under cancellation (0.2% at eps = 1e-5): its own error is allowed on top.
					slow := norm2(one)
					slowErr := math.Abs(slow-want[i]) / want[i]
					if e := math.Abs(nrm-slow) / slow; !(e <= 1e-3+slowErr) {
						t.Errorf("%s: example %d: norm %g, slow path %g, float64 %g", name, i, nrm, slow, want[i])
					}
					tol := 1e-3
					if keep {
						tol += slowErr
					} else if !(nrm >= want[i]*(1-1e-12)) {
						t.Errorf("%s: example %d: norm %g under-estimates the float64 norm %g", name, i, nrm, want[i])
					}
					if e := math.Abs(nrm-want[i]) / want[i]; !(e <= tol) {
						t.Errorf("%s: example %d: norm %g, float64 norm %g (%.2g relative)", name, i, nrm, want[i], e)
					}
					c := 1.0
					if nrm > clip {
						c = float64(models.ClipFactor(clip, nrm))
					}
					// The clipped contribution: c_i times the exact gradient, or, where the
					// kept float32 product is what is released, the batch of one's clipped sum.
					ratio := c * want[i] / clip
					if keep {
						if _, err := nw.ClippedGradSum(bi, clip, one, nil); err != nil {
							t.Fatal(err)
						}
						ratio = norm2(one) / clip
					}
					worst = max(worst, ratio)
					if !(ratio <= 1+1e-5) {
						t.Errorf("%s: example %d: clipped contribution %g·C", name, i, ratio)
					}
					// The released sum without example i.
					rest := data.Batch{X: append(slices.Clone(b.X[:i*dim]), b.X[(i+1)*dim:]...),
						Y: append(slices.Clone(b.Y[:i]), b.Y[i+1:]...), N: n - 1}
					if _, err := nw.ClippedGradSum(rest, clip, one, nil); err != nil {
						t.Fatalf("%s: without example %d: %v", name, i, err)
					}
					// Removing the example moves the released sum by at most C: its own
					// contribution and the others' rounding (float32 there would add
					// u·Σ_p‖P_p‖‖G_p‖, up to 1.3e-3·C here).
					nb := diffNorm(grad, one) / clip
					worstNb = max(worstNb, nb)
					if !(nb <= 1+1e-5) {
						t.Errorf("%s: removing example %d moves the clipped sum by %.7g·C", name, i, nb)
					}
				}
			}
		}
	}
	return worst, worstNb
}
