package optim

import (
	"slices"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// Stopping after k steps, saving, restoring into a fresh optimizer and continuing must give
// bit-identical parameters to an uninterrupted run (same batches and noise stream).
func TestStateRestoreIsExact(t *testing.T) {
	const d, k, n = 4, 3, 60
	info := BatchInfo{Sampling: accounting.Poisson, SampleRate: 0.2, DatasetSize: n}
	rules := map[string]func() UpdateRule{
		"sgd":      func() UpdateRule { r, _ := NewSGD(0.01); return r },
		"momentum": func() UpdateRule { r, _ := NewMomentum(0.9, true, 0); return r },
		"adam":     func() UpdateRule { r, _ := NewAdam(0.9, 0.999, 1e-8, 0.01, true); return r },
	}
	build := map[string]func(rule UpdateRule, noise *Noise) Optimizer{
		"dpsgd": func(rule UpdateRule, noise *Noise) Optimizer {
			o, err := NewDPSGD(DPSGDConfig{NoiseMultiplier: 1, ClipNorm: 1, Rule: rule, Schedule: mustStepDecay(t, 0.1, 0.5, 3)}, noise)
			if err != nil {
				t.Fatal(err)
			}
			return o
		},
		"modelmix": func(_ UpdateRule, noise *Noise) Optimizer {
			o, err := NewModelMix(ModelMixConfig{NoiseMultiplier: 1, ClipNorm: 1, LinfParts: 2, Schedule: Constant{0.1}, MixRatio: 1}, noise)
			if err != nil {
				t.Fatal(err)
			}
			return o
		},
	}
	batches := make([]Batch, 8)
	for i := range batches {
		batches[i] = syntheticBatch(12, d, NewSeededNoise(uint64(100+i)))
		for j := range batches[i].Y {
			batches[i].Y[j] %= k
		}
	}
	for oname, mk := range build {
		for rname, rule := range rules {
			if oname == "modelmix" && rname != "sgd" {
				continue
			}
			// Uninterrupted.
			noise := NewSeededNoise(7)
			m := newSoftmaxModel(d, k)
			o := mk(rule(), noise)
			for _, b := range batches {
				if _, err := o.Step(m, b, info); err != nil {
					t.Fatal(err)
				}
			}
			want := slices.Clone(m.Params())

			// Interrupted after 4 steps.
			noise = NewSeededNoise(7)
			m2 := newSoftmaxModel(d, k)
			o2 := mk(rule(), noise)
			for _, b := range batches[:4] {
				if _, err := o2.Step(m2, b, info); err != nil {
					t.Fatal(err)
				}
			}
			vecs, sc := o2.(Checkpointer).State()
			saved := map[string][]float32{}
			for key, v := range vecs {
				saved[key] = slices.Clone(v)
			}
			params := slices.Clone(m2.Params())
			m3 := newSoftmaxModel(d, k)
			copy(m3.Params(), params)
			o3 := mk(rule(), noise) // the noise stream continues where it was
			if err := o3.(Checkpointer).Restore(saved, sc); err != nil {
				t.Fatalf("%s/%s: %v", oname, rname, err)
			}
			for _, b := range batches[4:] {
				if _, err := o3.Step(m3, b, info); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(want, m3.Params()) {
				t.Errorf("%s/%s: resumed parameters differ from the uninterrupted run", oname, rname)
			}
		}
	}
}

func TestRestoreRefusesForeignState(t *testing.T) {
	noise := NewSeededNoise(1)
	sgd, _ := NewDPSGD(DPSGDConfig{NoiseMultiplier: 1, ClipNorm: 1, Schedule: Constant{0.1}}, noise)
	if err := sgd.Restore(map[string][]float32{"previous_iterate": {1}}, map[string]float64{"steps": 3}); err == nil {
		t.Error("DP-SGD accepted ModelMix state")
	}
	if err := sgd.Restore(nil, nil); err == nil {
		t.Error("state without a step count accepted")
	}
	adam, _ := NewAdam(0.9, 0.999, 1e-8, 0, false)
	o, _ := NewDPSGD(DPSGDConfig{NoiseMultiplier: 1, ClipNorm: 1, Rule: adam, Schedule: Constant{0.1}}, noise)
	if err := o.Restore(map[string][]float32{"momentum": {1}}, map[string]float64{"steps": 3}); err == nil {
		t.Error("Adam accepted momentum state")
	}
}
