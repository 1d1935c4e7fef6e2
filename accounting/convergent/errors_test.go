package convergent

import (
	"strings"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// TestRunErrors: every run-level assumption that fails is refused with an error naming it.
func TestRunErrors(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*accounting.Run)
		want   string
	}{
		{"states released", func(r *accounting.Run) { r.LastIterateOnly = false }, "last iterate"},
		{"momentum", func(r *accounting.Run) { r.UpdateRule = "momentum" }, "update rule"},
		{"adam", func(r *accounting.Run) { r.UpdateRule = "adam" }, "update rule"},
		{"no projection", func(r *accounting.Run) { r.DomainDiameter = 0 }, "diameter"},
		{"no n", func(r *accounting.Run) { r.DatasetSize = 0 }, "dataset size"},
		{"no class", func(r *accounting.Run) { r.Convexity = "" }, "convexity"},
		{"unknown class", func(r *accounting.Run) { r.Convexity = "quasi" }, "convexity"},
		{"no smoothness", func(r *accounting.Run) { r.Smoothness = 0 }, "smoothness"},
		{"Hölder out of range", func(r *accounting.Run) { r.HolderExponent = 1.5 }, "Hölder"},
		{"convex non-smooth", func(r *accounting.Run) { r.Convexity = accounting.Convex; r.HolderExponent = 0.5 }, "λ = 1"},
		{"convex without K", func(r *accounting.Run) { r.Convexity = accounting.Convex; r.Lipschitz = 0 }, "Lipschitz"},
		{"strongly convex without m", func(r *accounting.Run) { r.Convexity = accounting.StronglyConvex; r.StrongConvexity = 0 }, "strong convexity"},
		{"m > L", func(r *accounting.Run) { r.Convexity = accounting.StronglyConvex; r.StrongConvexity = 2 }, "m = 2 > smoothness"},
		{"K < mD/2", func(r *accounting.Run) {
			r.Convexity = accounting.StronglyConvex
			r.Lipschitz, r.DomainDiameter = 0.1, 1
		}, "inconsistent"},
	}
	for _, tt := range tests {
		run := figure1Run(accounting.NonConvex)
		tt.modify(&run)
		for _, build := range []func(accounting.Run) error{
			func(r accounting.Run) error { _, err := NewFullBatch(r, Options{}); return err },
			func(r accounting.Run) error { _, err := NewSubsampled(r, Options{}); return err },
			func(r accounting.Run) error { _, err := NewCyclic(r); return err },
			func(r accounting.Run) error { _, err := New(r); return err },
		} {
			err := build(run)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("%s: error %v, want one mentioning %q", tt.name, err, tt.want)
			}
		}
	}
	r := figure1Run(accounting.NonConvex)
	r.HolderExponent = 0.5
	if _, err := NewCyclic(r); err == nil {
		t.Error("cyclic accepted Hölder gradients")
	}
	if _, err := NewOutputPerturbation(accounting.Run{LastIterateOnly: true, UpdateRule: "sgd", DatasetSize: 5}, false); err == nil {
		t.Error("output perturbation accepted an unbounded domain")
	}
}

// TestStepErrors: every step-level assumption that fails is refused, and the accountant is left
// unchanged.
func TestStepErrors(t *testing.T) {
	good := func() accounting.Step { return noisyStep(accounting.FullBatch, 1, 0.1, 5, 5, 1) }
	tests := []struct {
		name   string
		conv   accounting.Convexity
		modify func(*accounting.Step)
		want   string
	}{
		{"mechanism", accounting.NonConvex, func(s *accounting.Step) { s.Mechanism = accounting.SampledWithRejectionGaussian }, "mechanism"},
		{"add-remove", accounting.NonConvex, func(s *accounting.Step) { s.Neighbouring = accounting.AddRemove }, "replace-one"},
		{"poisson", accounting.NonConvex, func(s *accounting.Step) { s.Sampling = accounting.Poisson; s.SampleRate = 0.5 }, "not covered"},
		{"dataset size", accounting.NonConvex, func(s *accounting.Step) { s.DatasetSize = 6 }, "dataset size"},
		{"step size", accounting.NonConvex, func(s *accounting.Step) { s.StepSize = 0 }, "step size"},
		{"no noise", accounting.NonConvex, func(s *accounting.Step) { s.NoiseStd, s.Sensitivity = 0, 0 }, "noise std"},
		{"noise mismatch", accounting.NonConvex, func(s *accounting.Step) { s.NoiseStd *= 2 }, "disagrees"},
		{"convex η > 2/L", accounting.Convex, func(s *accounting.Step) { s.StepSize = 2.5; s.NoiseStd = 2; s.NoiseMultiplier = 1 }, "exceeds"},
		{"strongly convex η > 1/L", accounting.StronglyConvex, func(s *accounting.Step) { s.StepSize = 1.5; s.NoiseStd = 2; s.NoiseMultiplier = 1 }, "exceeds"},
		{"active clipping, convex", accounting.Convex, func(s *accounting.Step) { s.Sensitivity = 1; s.NoiseMultiplier = s.NoiseStd }, "clipped"},
		{"σ changes", accounting.NonConvex, func(s *accounting.Step) { s.NoiseStd *= 1.5; s.NoiseMultiplier *= 1.5 }, "changed"},
		{"η changes", accounting.NonConvex, func(s *accounting.Step) { s.StepSize = 0.2; s.NoiseStd *= 2; s.NoiseMultiplier *= 2 }, "changed"},
	}
	for _, tt := range tests {
		a, err := NewFullBatch(figure1Run(tt.conv), Options{})
		if err != nil {
			t.Fatal(err)
		}
		mustCompose(t, a, good())
		before, _ := a.Rho()
		s := good()
		tt.modify(&s)
		err = a.Compose(s)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tt.name, err, tt.want)
		}
		if after, _ := a.Rho(); a.Steps() != 1 || after != before {
			t.Errorf("%s: refused step changed the accountant", tt.name)
		}
	}
	// Cyclic: b must divide n, and a fixed partition must be visited in order.
	run := figure1Run(accounting.NonConvex)
	run.DatasetSize = 22
	c, _ := NewCyclic(run)
	if err := c.Compose(noisyStep(accounting.Shuffled, 1, 0.1, 5, 22, 1)); err == nil || !strings.Contains(err.Error(), "divide") {
		t.Errorf("b ∤ n: %v", err)
	}
	run.DatasetSize = 20
	c, _ = NewCyclic(run)
	s := noisyStep(accounting.ShuffledOnce, 1, 0.1, 5, 20, 1)
	mustCompose(t, c, s)
	if err := c.Compose(s); err == nil || !strings.Contains(err.Error(), "batch index") {
		t.Errorf("repeated batch index: %v", err)
	}
	// Every accountant returns an error, not a number, for a bad δ.
	a, _ := NewFullBatch(figure1Run(accounting.NonConvex), Options{})
	mustCompose(t, a, good())
	for _, d := range []float64{0, 1, -1} {
		if _, err := a.Epsilon(d); err == nil {
			t.Errorf("δ = %v accepted", d)
		}
	}
}

func TestRefusesBlockSteps(t *testing.T) {
	a, err := NewFullBatch(figure1Run(accounting.Convex), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := noisyStep(accounting.FullBatch, 1, 0.1, 5, 5, 1)
	s.Block = 2
	if err := a.Compose(s); err == nil || !strings.Contains(err.Error(), "block 2") {
		t.Errorf("a block-coordinate step was accepted (err = %v)", err)
	}
}
