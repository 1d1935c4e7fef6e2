package optim

import (
	"math"
	"testing"

	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
)

// Tests against the real gorgonia models: per-sample gradients come from the slow
// models.Network.ReferenceGrad path, clipped and summed here in float64.

var _ GradientOracle = (*models.Network)(nil)

func newNetwork(t *testing.T, spec models.Spec, seed uint64) *models.Network {
	t.Helper()
	nw, err := models.New(spec, NewSeededNoise(seed).Rand())
	if err != nil {
		t.Fatal(err)
	}
	return nw
}

// syntheticBatch draws n examples of dimension d whose label is the sign pattern of two
// coordinates (4 classes).
func syntheticBatch(n, d int, noise *Noise) Batch {
	x := make([]float32, n*d)
	noise.FillGaussian(x, 1)
	y := make([]int32, n)
	for i := range y {
		row := x[i*d : (i+1)*d]
		c := int32(0)
		if row[0] > 0 {
			c++
		}
		if row[1] > 0 {
			c += 2
		}
		y[i] = c
	}
	return Batch{X: x, Y: y, N: n}
}

// referenceSum returns Σ_i transform(g_i) from per-sample reference gradients, in float64.
func referenceSum(t *testing.T, nw *models.Network, b Batch, transform func(g []float64)) []float64 {
	t.Helper()
	d := len(b.X) / b.N
	p := len(nw.Params())
	sum := make([]float64, p)
	g32 := make([]float32, p)
	g := make([]float64, p)
	for i := range b.N {
		if _, err := nw.ReferenceGrad(b.X[i*d:(i+1)*d], b.Y[i], g32); err != nil {
			t.Fatal(err)
		}
		for j, v := range g32 {
			g[j] = float64(v)
		}
		transform(g)
		for j, v := range g {
			sum[j] += v
		}
	}
	return sum
}

func clipRef(c float64, p int) func(g []float64) {
	return func(g []float64) {
		var s float64
		for _, v := range g {
			s += v * v
		}
		if n := math.Sqrt(s); n > c {
			for j := range g {
				g[j] *= c / n
			}
		}
		if p > 1 {
			bound := c / math.Sqrt(float64(p))
			for j := range g {
				g[j] = math.Max(-bound, math.Min(bound, g[j]))
			}
		}
	}
}

func checkClose(t *testing.T, what string, got []float32, want []float64, tol float64) {
	t.Helper()
	var worst, scale float64
	for i := range want {
		worst = math.Max(worst, math.Abs(float64(got[i])-want[i]))
		scale = math.Max(scale, math.Abs(want[i]))
	}
	if worst > tol*math.Max(scale, 1e-3) {
		t.Errorf("%s: max deviation %v from the reference (scale %v)", what, worst, scale)
	}
}

// TestDPSGDRealMLP checks a noiseless clipped DP-SGD step on a real MLP against the reference
// per-sample gradients: θ_1 = θ_0 − η·Σ clip(g_i)/b.
func TestDPSGDRealMLP(t *testing.T) {
	const d, b, clip, lr = 12, 16, 0.5, 0.3
	nw := newNetwork(t, models.Spec{Kind: "mlp", Input: []int{d}, Classes: 4, Hidden: []int{8}, Activation: "tanh"}, 1)
	batch := syntheticBatch(b, d, NewSeededNoise(2))
	theta0 := append([]float32(nil), nw.Params()...)
	want := referenceSum(t, nw, batch, clipRef(clip, 1))
	o, err := NewDPSGD(DPSGDConfig{ClipNorm: clip, Schedule: Constant{lr}}, NewSeededNoise(3))
	if err != nil {
		t.Fatal(err)
	}
	res, err := o.Step(nw, batch, drawn(data.SchemeWithoutReplacement, 100, float64(b), 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for j := range want {
		want[j] = float64(theta0[j]) - lr*want[j]/b
	}
	checkClose(t, "θ_1", nw.Params(), want, 1e-4)
	if res.Stats.N != b {
		t.Errorf("Stats.N = %d, want %d", res.Stats.N, b)
	}
}

// TestModelMixRealMLP checks ModelMix's l2+l∞ clipped sum on a real MLP against the reference.
func TestModelMixRealMLP(t *testing.T) {
	const d, b, clip, p = 10, 8, 0.3, 9
	nw := newNetwork(t, models.Spec{Kind: "mlp", Input: []int{d}, Classes: 4, Hidden: []int{6}, Activation: "relu"}, 4)
	batch := syntheticBatch(b, d, NewSeededNoise(5))
	want := referenceSum(t, nw, batch, clipRef(clip, p))
	o, err := NewModelMix(ModelMixConfig{NoiseMultiplier: 1, ClipNorm: clip, LinfParts: p, Schedule: Constant{0.1}, MixRatio: 0.1}, NewSeededNoise(6))
	if err != nil {
		t.Fatal(err)
	}
	o.grad = resize(o.grad, len(nw.Params()))
	if _, err := o.gradSum(nw, batch); err != nil {
		t.Fatal(err)
	}
	checkClose(t, "clipped sum", o.grad, want, 1e-4)
}

// TestDPSGLDRealLogreg runs DP-SGLD on the real softmax regression: its per-sample gradients
// respect the derived L_data (up to float32 rounding), the iterates stay in the ball, the safety clip never activates, and
// training at a small temperature fits separable data.
func TestDPSGLDRealLogreg(t *testing.T) {
	const d, classes, n, m = 6, 4, 400, 40
	nw := newNetwork(t, models.Spec{Kind: "logreg", Input: []int{d}, Classes: classes}, 7)
	noise := NewSeededNoise(8)
	batch := syntheticBatch(n, d, noise)
	// Public feature bound R_x = 3: DP-SGLD rescales the few rows above it.
	c, err := SoftmaxLangevinConstants(3, classes, 1e-3, true)
	if err != nil {
		t.Fatal(err)
	}
	norms := make([]float64, n)
	grad := make([]float32, len(nw.Params()))
	bounded := Batch{X: append([]float32(nil), batch.X...), Y: batch.Y, N: n}
	for i := range n {
		if _, err := ClipL2(bounded.X[i*d:(i+1)*d], c.FeatureNorm); err != nil {
			t.Fatal(err)
		}
	}
	for trial := range 3 {
		noise.FillGaussian(nw.Params(), float64(trial+1))
		if _, err := nw.ClippedGradSum(bounded, math.Inf(1), grad, norms); err != nil {
			t.Fatal(err)
		}
		for i, v := range norms {
			// float32 rounding may exceed the bound by an ulp where p_y ≈ 0.
			if v > c.DataLipschitz*(1+1e-6) {
				t.Fatalf("example %d: ‖∇ℓ‖ = %v > L_data = %v", i, v, c.DataLipschitz)
			}
		}
	}

	o, err := NewDPSGLD(DPSGLDConfig{Sigma: 1e-3, Constants: c, PlannedSteps: 300}, NewSeededNoise(9))
	if err != nil {
		t.Fatal(err)
	}
	o.Init(nw.Params())
	sampler := NewSeededNoise(10).Rand()
	info := drawn(data.SchemeWithoutReplacement, n, float64(m), 0, 0)
	x := make([]float32, m*d)
	y := make([]int32, m)
	for k := range 300 {
		for i, idx := range sampler.Perm(n)[:m] {
			copy(x[i*d:(i+1)*d], batch.X[idx*d:(idx+1)*d])
			y[i] = batch.Y[idx]
		}
		res, err := o.Step(nw, Batch{X: x, Y: y, N: m}, info)
		if err != nil {
			t.Fatal(err)
		}
		if res.Stats.Clipped != 0 {
			t.Fatalf("step %d: safety clip activated", k)
		}
		if Norm2(nw.Params()) > c.Radius {
			t.Fatalf("step %d: ‖θ‖ = %v > R = %v", k, Norm2(nw.Params()), c.Radius)
		}
	}
	st, err := nw.Evaluate(bounded)
	if err != nil {
		t.Fatal(err)
	}
	if acc := float64(st.Correct) / float64(st.N); acc < 0.85 {
		t.Errorf("DP-SGLD logistic regression accuracy %v on separable data, want ≥ 0.85", acc)
	}
}
