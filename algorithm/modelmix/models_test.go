package modelmix

import (
	"testing"

	"github.com/dptrain/dptrain/algorithm/internal/steptest"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
)

// Tests against the real gorgonia models: per-sample gradients come from the slow
// models.Network.ReferenceGrad path, clipped and summed here in float64.

// TestModelMixRealMLP checks ModelMix's l2+l∞ clipped sum on a real MLP against the reference.
func TestModelMixRealMLP(t *testing.T) {
	const d, b, clip, p = 10, 8, 0.3, 9
	nw := steptest.NewNetwork(t, models.Spec{Kind: "mlp", Input: []int{d}, Classes: 4, Hidden: []int{6}, Activation: "relu"}, 4)
	batch := steptest.SyntheticBatch(b, d, optim.NewSeededNoise(5))
	want := steptest.ReferenceSum(t, nw, batch, steptest.ClipRef(clip, p))
	o, err := New(Config{NoiseMultiplier: 1, ClipNorm: clip, LinfParts: p, Schedule: optim.Constant{Rate: 0.1}, MixRatio: 0.1}, optim.NewSeededNoise(6))
	if err != nil {
		t.Fatal(err)
	}
	o.grad = optim.Resize(o.grad, len(nw.Params()))
	if _, err := o.gradSum(nw, batch); err != nil {
		t.Fatal(err)
	}
	steptest.CheckClose(t, "clipped sum", o.grad, want, 1e-4)
}
