package dpsgld

import (
	"math"
	"testing"

	"github.com/dptrain/dptrain/algorithm/internal/steptest"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
)

// Tests against the real gorgonia models: per-sample gradients come from the slow
// models.Network.ReferenceGrad path, clipped and summed here in float64.

// TestDPSGLDRealLogreg runs DP-SGLD on the real softmax regression: its per-sample gradients
// respect the derived L_data (up to float32 rounding), the iterates stay in the ball, the safety clip never activates, and
// training at a small temperature fits separable data.
func TestDPSGLDRealLogreg(t *testing.T) {
	const d, classes, n, m = 6, 4, 400, 40
	nw := steptest.NewNetwork(t, models.Spec{Kind: "logreg", Input: []int{d}, Classes: classes}, 7)
	noise := optim.NewSeededNoise(8)
	batch := steptest.SyntheticBatch(n, d, noise)
	// Public feature bound R_x = 3: DP-SGLD rescales the few rows above it.
	c, err := SoftmaxConstants(3, classes, 1e-3, true)
	if err != nil {
		t.Fatal(err)
	}
	norms := make([]float64, n)
	grad := make([]float32, len(nw.Params()))
	bounded := data.Batch{X: append([]float32(nil), batch.X...), Y: batch.Y, N: n}
	for i := range n {
		if _, err := optim.ClipL2(bounded.X[i*d:(i+1)*d], c.FeatureNorm); err != nil {
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

	o, err := New(Config{Sigma: 1e-3, Constants: c, PlannedSteps: 300}, optim.NewSeededNoise(9))
	if err != nil {
		t.Fatal(err)
	}
	o.Init(nw.Params())
	sampler := optim.NewSeededNoise(10).Rand()
	info := steptest.Drawn(data.SchemeWithoutReplacement, n, float64(m), 0, 0)
	x := make([]float32, m*d)
	y := make([]int32, m)
	for k := range 300 {
		for i, idx := range sampler.Perm(n)[:m] {
			copy(x[i*d:(i+1)*d], batch.X[idx*d:(idx+1)*d])
			y[i] = batch.Y[idx]
		}
		res, err := o.Step(nw, data.Batch{X: x, Y: y, N: m}, info)
		if err != nil {
			t.Fatal(err)
		}
		if res.Stats.Clipped != 0 {
			t.Fatalf("step %d: safety clip activated", k)
		}
		if optim.Norm2(nw.Params()) > c.Radius {
			t.Fatalf("step %d: ‖θ‖ = %v > R = %v", k, optim.Norm2(nw.Params()), c.Radius)
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
