package compare

import (
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

func TestEpsilon(t *testing.T) {
	s := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, Neighbouring: accounting.AddRemove,
		NoiseMultiplier: 1.1, SampleRate: 0.01, Sensitivity: 1, NoiseStd: 1.1}
	run := accounting.Run{UpdateRule: "sgd"}
	zero, err := Epsilon("rdp", run, s, 1e-5)
	if err != nil || zero.Epsilon != 0 || zero.Accountant != "rdp" || zero.Label != accounting.Certified {
		t.Errorf("zero steps: %+v, %v: want ε 0, certified, named rdp", zero, err)
	}
	s.Count = 1000
	g, err := Epsilon("rdp", run, s, 1e-5)
	if err != nil || !(g.Epsilon > 0) || g.Accountant != "rdp" || g.Delta != 1e-5 {
		t.Errorf("1000 steps: %+v, %v", g, err)
	}
	s.Count = 2000
	if h, err := Epsilon("rdp", run, s, 1e-5); err != nil || !(h.Epsilon > g.Epsilon) {
		t.Errorf("2000 steps: ε %v (%v), not above 1000 steps' %v", h.Epsilon, err, g.Epsilon)
	}
	if _, err := Epsilon("no-such-mode", run, s, 1e-5); err == nil {
		t.Error("an unknown mode gave a guarantee")
	}
}
