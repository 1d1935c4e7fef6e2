package dpulr

import (
	"math"
	"reflect"
	"testing"

	"github.com/dptrain/dptrain/accounting"
	"github.com/dptrain/dptrain/algorithm/internal/steptest"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/layer"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
)

var _ ForwardOracle = (*models.Network)(nil)

// repeated returns a batch of n copies of one example, so that averaging the per-example
// likelihood-ratio estimates over the batch averages n independent copies.
func repeated(nw *models.Network, n int, noise *optim.Noise) data.Batch {
	d := nw.InputShape()[0]
	x := make([]float32, d)
	noise.FillGaussian(x, 1)
	b := data.Batch{N: n, X: make([]float32, n*d), Y: make([]int32, n)}
	for i := 0; i < n; i++ {
		copy(b.X[i*d:], x)
		b.Y[i] = 1
	}
	return b
}

// lrEstimates runs the estimator with injected σ at every layer and returns each layer's S.
func lrEstimates(t *testing.T, nw *models.Network, b data.Batch, sigma float64, copies int, allLayers bool) []layerState {
	t.Helper()
	o, err := New(Config{Copies: copies, NoiseMultiplier: 1, ClipNorm: 1, Schedule: optim.Constant{Rate: 0.1}, AllLayers: allLayers}, optim.NewSeededNoise(7))
	if err != nil {
		t.Fatal(err)
	}
	lin := nw.LinearLayers()
	layers := make([]layerState, len(lin))
	for i, l := range lin {
		layers[i] = layerState{info: l, ctl: LayerNoise{Sigma: sigma}, s: make([]float32, b.N*l.Geometry.Rows*l.Geometry.Out)}
	}
	tr, err := nw.Trace(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.estimate(nw, b, tr, layers); err != nil {
		t.Fatal(err)
	}
	return layers
}

// Prop. 3.1: with small σ the mean of the likelihood-ratio estimate of ∂ℓ/∂Z_l (a layer's bias
// gradient; the weight's is Sãᵀ exactly) matches the analytic gradient within a few standard
// errors, for both layers of a tanh MLP, one layer at a time and all layers at once.
func TestDPULRUnbiased(t *testing.T) {
	nw := steptest.NewNetwork(t, models.Spec{Kind: "mlp", Input: []int{5}, Classes: 3, Hidden: []int{4}, Activation: "tanh"}, 3)
	const n, copies, sigma = 4000, 50, 0.1
	b := repeated(nw, n, optim.NewSeededNoise(11))
	ref := make([]float32, len(nw.Params()))
	if _, err := nw.ReferenceGrad(b.X[:nw.InputShape()[0]], b.Y[0], ref); err != nil {
		t.Fatal(err)
	}
	for _, all := range []bool{false, true} {
		for _, l := range lrEstimates(t, nw, b, sigma, copies, all) {
			k := l.info.Geometry.Out
			for c := 0; c < k; c++ {
				var sum, sq float64
				for d := 0; d < n; d++ {
					v := float64(l.s[d*k+c])
					sum += v
					sq += v * v
				}
				mean := sum / n
				se := math.Sqrt((sq/n - mean*mean) / n)
				want := float64(ref[l.info.Bias+c])
				if math.Abs(mean-want) > 4*se+0.01 {
					t.Errorf("all=%v layer %s output %d: mean estimate %.4f ± %.4f, analytic gradient %.4f", all, l.info.Name, c, mean, se, want)
				}
			}
		}
	}
}

// Prop. 3.2: one copy's estimate (1/σ²)·Loss·z has variance ≈ L0²/σ² per coordinate at small σ.
func TestDPULRVariance(t *testing.T) {
	nw := steptest.NewNetwork(t, models.Spec{Kind: "logreg", Input: []int{4}, Classes: 3}, 5)
	const n, sigma = 20000, 0.05
	b := repeated(nw, n, optim.NewSeededNoise(13))
	tr, err := nw.Trace(b)
	if err != nil {
		t.Fatal(err)
	}
	l0 := tr.Loss[0]
	l := lrEstimates(t, nw, b, sigma, 1, false)[0]
	for c := 0; c < 3; c++ {
		var sum, sq float64
		for d := 0; d < n; d++ {
			v := float64(l.s[d*3+c])
			sum += v
			sq += v * v
		}
		v := sq/n - (sum/n)*(sum/n)
		want := l0 * l0 / (sigma * sigma)
		// Sampling error of a variance from 20000 draws is about 1%; the O(1) terms of
		// Eq. 22 are a few parts in a thousand of L0²/σ² here.
		if math.Abs(v/want-1) > 0.05 {
			t.Errorf("output %d: variance %.1f, L0²/σ² = %.1f", c, v, want)
		}
	}
}

// zeroLossModel is a one-dense-layer ForwardOracle whose perturbed losses are all zero, so
// the likelihood-ratio estimates vanish and a certified step releases its explicit noise only.
type zeroLossModel struct {
	params []float32
	in     int
}

func (z *zeroLossModel) Params() []float32 { return z.params }
func (z *zeroLossModel) LinearLayers() []layer.Linear {
	out := len(z.params) / (z.in + 1)
	return []layer.Linear{{Name: "fc", Geometry: layer.Geometry{Rows: 1, In: z.in, Out: out, Bias: true}, Weight: 0, Bias: z.in * out}}
}
func (z *zeroLossModel) Trace(b data.Batch) (layer.Trace, error) {
	tr := layer.Trace{Loss: make([]float64, b.N), Inputs: [][]float32{make([]float32, b.N*z.in)}}
	for i := range tr.Loss {
		tr.Loss[i] = 1
	}
	for i := range tr.Inputs[0] {
		tr.Inputs[0][i] = float32(i%7) - 3
	}
	return tr, nil
}
func (z *zeroLossModel) PerturbedLosses(b data.Batch, _ [][]float32, loss []float64) error {
	clear(loss[:b.N])
	return nil
}
func (z *zeroLossModel) PerturbedLossesFrom(b data.Batch, _ layer.Trace, _ int, _ []float32, loss []float64) error {
	clear(loss[:b.N])
	return nil
}
func (z *zeroLossModel) ClippedGradSum(data.Batch, float64, []float32, []float64) (data.Stats, error) {
	panic("DP-ULR must not differentiate")
}
func (z *zeroLossModel) PerSampleGradSum(data.Batch, func(int, []float32), []float32) (data.Stats, error) {
	panic("DP-ULR must not differentiate")
}

// Certified mode releases the clipped sum plus N(0, σ0²C²) per coordinate: with vanishing
// estimates, N_B × (the SGD update at learning rate 1) has standard deviation σ0·C.
func TestDPULRCertifiedNoiseStd(t *testing.T) {
	const in, out, nb, sigma0, clip = 99, 200, 10, 1.7, 0.6
	m := &zeroLossModel{params: make([]float32, (in+1)*out), in: in}
	o, err := New(Config{Copies: 2, NoiseMultiplier: sigma0, ClipNorm: clip, SigmaFloor: 0.1, Sigma: 0.5, Certified: true, Schedule: optim.Constant{Rate: 1}}, optim.NewSeededNoise(17))
	if err != nil {
		t.Fatal(err)
	}
	info := steptest.Drawn(data.SchemePoissonWithRejection, 200, (0.1)*float64(200), nb, 0)
	b := data.Batch{N: 12, X: make([]float32, 12*in), Y: make([]int32, 12)}
	if _, err := o.Step(m, b, info); err != nil {
		t.Fatal(err)
	}
	var sq float64
	for _, v := range m.params {
		u := float64(v) * nb
		sq += u * u
	}
	std := math.Sqrt(sq / float64(len(m.params)))
	// 20000 coordinates: the sample std's relative error is about 1/√40000 = 0.5%.
	if math.Abs(std/(sigma0*clip)-1) > 0.02 {
		t.Errorf("released noise std %.4f, want σ0·C = %.4f", std, sigma0*clip)
	}
}

// Declare returns exactly the records Step releases, in both modes; DP-ULR refuses sampling
// other than Poisson with rejection.
func TestDPULRDeclareEqualsStep(t *testing.T) {
	nw := steptest.NewNetwork(t, models.Spec{Kind: "mlp", Input: []int{6}, Classes: 4, Hidden: []int{5}, Activation: "gelu"}, 9)
	info := steptest.Drawn(data.SchemePoissonWithRejection, 400, (0.05)*float64(400), 10, 0)
	for _, certified := range []bool{false, true} {
		o, err := New(Config{Copies: 2, NoiseMultiplier: 2, ClipNorm: 1, SigmaFloor: 0.01, Sigma: sigmaIf(certified), Certified: certified,
			Rule: &optim.Adam{Beta1: 0.9, Beta2: 0.999, Epsilon: 1e-8}, Schedule: optim.Constant{Rate: 0.01}}, optim.NewSeededNoise(19))
		if err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 2; k++ {
			want, err := o.Declare(info)
			if err != nil {
				t.Fatal(err)
			}
			r, err := o.Step(nw, steptest.SyntheticBatch(23, 6, optim.NewSeededNoise(uint64(k))), info)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(want, r.Records) {
				t.Errorf("certified=%v step %d: declared %+v, released %+v", certified, k, want, r.Records)
			}
			mech := accounting.SampledWithRejectionGaussian
			if certified {
				mech = accounting.Gaussian
			}
			if r.Records[0].Mechanism != mech || r.Records[0].NoiseMultiplier != 2 {
				t.Errorf("certified=%v: record %+v", certified, r.Records[0])
			}
		}
		if _, err := o.Declare(steptest.Drawn(data.SchemePoisson, 400, 20, 0, 0)); err == nil {
			t.Error("plain Poisson sampling accepted")
		}
	}
}

// sigmaIf is the public injected σ_l certified mode needs (0, the controller, otherwise).
func sigmaIf(certified bool) float64 {
	if certified {
		return 0.5
	}
	return 0
}
