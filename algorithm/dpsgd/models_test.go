package dpsgd

import (
	"testing"

	"github.com/dptrain/dptrain/algorithm/internal/steptest"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
)

// Tests against the real gorgonia models: per-sample gradients come from the slow
// models.Network.ReferenceGrad path, clipped and summed here in float64.

// TestDPSGDRealMLP checks a noiseless clipped DP-SGD step on a real MLP against the reference
// per-sample gradients: θ_1 = θ_0 − η·Σ clip(g_i)/b.
func TestDPSGDRealMLP(t *testing.T) {
	const d, b, clip, lr = 12, 16, 0.5, 0.3
	nw := steptest.NewNetwork(t, models.Spec{Kind: "mlp", Input: []int{d}, Classes: 4, Hidden: []int{8}, Activation: "tanh"}, 1)
	batch := steptest.SyntheticBatch(b, d, optim.NewSeededNoise(2))
	theta0 := append([]float32(nil), nw.Params()...)
	want := steptest.ReferenceSum(t, nw, batch, steptest.ClipRef(clip, 1))
	o, err := New(Config{ClipNorm: clip, Schedule: optim.Constant{Rate: lr}}, optim.NewSeededNoise(3))
	if err != nil {
		t.Fatal(err)
	}
	res, err := o.Step(nw, batch, steptest.Drawn(data.SchemeWithoutReplacement, 100, float64(b), 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	for j := range want {
		want[j] = float64(theta0[j]) - lr*want[j]/b
	}
	steptest.CheckClose(t, "θ_1", nw.Params(), want, 1e-4)
	if res.Stats.N != b {
		t.Errorf("Stats.N = %d, want %d", res.Stats.N, b)
	}
}
