package models

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// cancelSpec is a conv layer on the Gram path (16 output positions, patch width 72, 16
// channels: 16·(72+16) < 2·72·16) feeding a dense layer through tanh.
var cancelSpec = Spec{Kind: "cnn", Input: []int{8, 6, 6}, Classes: 2, Layers: []LayerSpec{
	{Type: "conv2d", Out: 16, Kernel: 3}, {Type: "tanh"}, {Type: "flatten"}, {Type: "dense", Out: 2}}}

// setCancelling gives nw the audit's adversarial parameters: conv weights and biases 0 (so the
// conv output is 0 and tanh' = 1 there), and a dense layer whose weights to class 0 alternate
// in sign over the conv's output positions, w_c·s_p·(1 + eps·u_{cp}) with s_p = ±1 in a
// checkerboard and u uniform in [−1, 1), weights to class 1 zero. With a constant input every
// patch P_p is the same, so the conv weight gradient Σ_p P_p G_pᵀ and the bias gradient Σ_p G_p
// cancel down to the eps-sized residue while every Gram entry is of the full size.
func setCancelling(nw *Network, rng *rand.Rand, eps float64) {
	p := nw.Params()
	clear(p)
	for _, info := range nw.Layout() {
		if info.Name != "dense3.weight" {
			continue
		}
		w := p[info.Offset : info.Offset+info.Size] // 256×2, feature (channel, row, column)
		for c := 0; c < 16; c++ {
			wc := 0.5 + rng.Float64()
			for pos := 0; pos < 16; pos++ {
				s := 1.0
				if (pos/4+pos%4)%2 == 1 {
					s = -1
				}
				w[(c*16+pos)*2] = float32(wc * s * (1 + eps*(2*rng.Float64()-1)))
			}
		}
	}
}

// exactNorms returns each example's gradient norm computed in float64 from the graph's own
// layer inputs A and output gradients G (dense: ‖a‖²‖g‖² + ‖g‖²; conv: ‖P_iᵀG_i‖² + ‖G_iᵀ1‖²
// with every product and sum in float64).
func exactNorms(t *testing.T, nw *Network, b Batch) []float64 {
	t.Helper()
	var s Stats
	tp, m, err := nw.pass(b, 0, modeGhost, &s, nil)
	if err != nil || m != b.N {
		t.Fatalf("exactNorms: pass of %d: %v", m, err)
	}
	sq := make([]float64, m)
	for j := range nw.plan.layers {
		l := &nw.plan.layers[j]
		r, d, k := l.rows(), l.d, l.k
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
			if l.b >= 0 {
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
	d, g := enginePair(t, cancelSpec)
	if d.dr == nil {
		t.Fatal("no direct executor for the cancelling CNN")
	}
	if l := &d.plan.layers[0]; !l.geometry().useGram() {
		t.Fatal("the conv layer is not on the Gram path")
	}
	worst, worstNb := 0.0, 0.0
	for seed := range uint64(6) {
		for _, eps := range []float64{1e-2, 1e-3, 3e-4, 2e-4, 1e-4, 1e-5} {
			rng := rand.New(rand.NewPCG(seed, 17))
			setCancelling(d, rng, eps)
			copy(g.Params(), d.Params())
			const n = 9
			b := Batch{X: make([]float32, n*d.inDim), Y: make([]int32, n), N: n}
			for i := 0; i < n; i++ {
				x := float32(math.Pow(10, float64(i%5))) * float32(1+rng.Float64()) // 1 to 2·10⁴
				if i%3 == 2 {
					x = -x
				}
				for u := range d.inDim {
					b.X[i*d.inDim+u] = x
				}
				b.Y[i] = int32(rng.IntN(2))
			}
			want := exactNorms(t, g, b)
			for _, nw := range []*Network{d, g} {
				name := fmt.Sprintf("%s/seed=%d/eps=%g", nw.Engine(), seed, eps)
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
				one := make([]float32, len(nw.Params()))
				for i, nrm := range norms {
					if e := math.Abs(nrm-want[i]) / want[i]; !(e <= 1e-3) {
						t.Errorf("%s: example %d: norm %g, float64 norm %g (%.2g relative)", name, i, nrm, want[i], e)
					}
					bi := Batch{X: b.X[i*d.inDim : (i+1)*d.inDim], Y: b.Y[i : i+1], N: 1}
					if _, err := nw.PerSampleGradSum(bi, nil, one); err != nil {
						t.Fatalf("%s: slow path, example %d: %v", name, i, err)
					}
					// The slow path's float32 P_iᵀG_i is itself off by up to u·r·Σ_p‖P_p‖‖G_p‖
					// under cancellation (0.2% at eps = 1e-5): its own error is allowed on top.
					slow := norm2(one)
					if e := math.Abs(nrm-slow) / slow; !(e <= 1e-3+math.Abs(slow-want[i])/want[i]) {
						t.Errorf("%s: example %d: norm %g, slow path %g, float64 %g", name, i, nrm, slow, want[i])
					}
					c := 1.0
					if nrm > clip {
						c = float64(ClipFactor(clip, nrm))
					}
					ratio := c * want[i] / clip
					worst = max(worst, ratio)
					if !(ratio <= 1+1e-5) {
						t.Errorf("%s: example %d: clipped contribution %g·C", name, i, ratio)
					}
					// The released sum without example i.
					rest := Batch{X: append(slices.Clone(b.X[:i*d.inDim]), b.X[(i+1)*d.inDim:]...),
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
	t.Logf("worst ‖clipped contribution‖/C: %.9g; worst ‖S(D) − S(D without i)‖/C: %.9g", worst, worstNb)
}
