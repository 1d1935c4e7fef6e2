package dpulr

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dptrain/dptrain/algorithm"
	"github.com/dptrain/dptrain/algorithm/internal/steptest"
	"github.com/dptrain/dptrain/data"
	"github.com/dptrain/dptrain/models"
	"github.com/dptrain/dptrain/optim"
)

// The section's defaults are a fixed σ_l = 1 with K = 16 copies; the Eq. 7 controller runs only
// when optimizer.dp_ulr.controller is eq7, and a config written for the old default (sigma 0,
// sigma_floor set, no controller key) is refused with the fix.
func TestSectionDefaultsAndValidation(t *testing.T) {
	def := Algorithm().NewSection().(*Section)
	if def.Mode != "paper" || def.Copies != 16 || def.Controller != ControllerFixed || def.Sigma != 1 || def.SigmaFloor != 0 || def.SigmaCap != 0 {
		t.Fatalf("default section %+v, want mode paper, copies 16, controller fixed, sigma 1, no floor or cap", *def)
	}
	for _, c := range []struct {
		name string
		set  func(s *Section)
		want string // "" = valid; otherwise a substring of the error
		// sigma, floor, cap are the Config the optimizer is built with when valid.
		sigma, floor, cap float64
	}{
		{"defaults", func(s *Section) {}, "", 1, 0, 0},
		{"certified with the default σ_l", func(s *Section) { s.Mode = "certified" }, "", 1, 0, 0},
		{"fixed σ_l 0.5", func(s *Section) { s.Sigma = 0.5 }, "", 0.5, 0, 0},
		{"eq7 controller, default floor", func(s *Section) { s.Controller = ControllerEq7 }, "", 0, DefaultSigmaFloor, 0},
		{"eq7 controller, floor and cap", func(s *Section) { s.Controller, s.SigmaFloor, s.SigmaCap = ControllerEq7, 0.1, 2 }, "", 0, 0.1, 2},
		{"sigma 0 (the old controller default)", func(s *Section) { s.Sigma = 0 }, "controller: eq7", 0, 0, 0},
		{"old paper config", func(s *Section) { s.Copies, s.SigmaFloor = 1, 0.01 }, "controller: eq7", 0, 0, 0},
		{"cap without the controller", func(s *Section) { s.SigmaCap = 1 }, "remove sigma_floor and sigma_cap", 0, 0, 0},
		{"negative σ_l", func(s *Section) { s.Sigma = -1 }, "finite and positive", 0, 0, 0},
		{"eq7 in certified mode", func(s *Section) { s.Controller, s.Mode = ControllerEq7, "certified" }, "sensitivity C", 0, 0, 0},
		{"eq7 cap below the default floor", func(s *Section) { s.Controller, s.SigmaCap = ControllerEq7, 0.001 }, "sigma_cap", 0, 0, 0},
		{"unknown controller", func(s *Section) { s.Controller = "pid" }, "want fixed", 0, 0, 0},
		{"no copies", func(s *Section) { s.Copies = 0 }, "copies", 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := Algorithm().NewSection().(*Section)
			c.set(s)
			errs := Algorithm().Validate(algorithm.Config{}, s)
			if c.want != "" {
				if len(errs) == 0 || !strings.Contains(fmt.Sprint(errs), c.want) {
					t.Fatalf("errors %v, want one mentioning %q", errs, c.want)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("valid section refused: %v", errs)
			}
			cfg := preparedConfig(t, s)
			if cfg.Sigma != c.sigma || cfg.SigmaFloor != c.floor || cfg.SigmaCap != c.cap || cfg.Copies != s.Copies || cfg.Certified != (s.Mode == "certified") {
				t.Errorf("optimizer config σ_l %v, floor %v, cap %v, K %d, certified %v; want %v, %v, %v, %d, %v",
					cfg.Sigma, cfg.SigmaFloor, cfg.SigmaCap, cfg.Copies, cfg.Certified, c.sigma, c.floor, c.cap, s.Copies, s.Mode == "certified")
			}
		})
	}
}

// preparedConfig runs the registration's Prepare on a small MLP and returns the Config the
// optimizer was built with.
func preparedConfig(t *testing.T, s *Section) Config {
	t.Helper()
	nw := steptest.NewNetwork(t, models.Spec{Kind: "mlp", Input: []int{4}, Classes: 3, Hidden: []int{3}, Activation: "gelu"}, 1)
	var c algorithm.Config
	c.Optimizer.ClipNorm, c.Optimizer.Update, c.Optimizer.LearningRate = 1, "sgd", 0.1
	p, err := Algorithm().Prepare(algorithm.Env{Config: c, Section: s, Model: algorithm.Model{Name: nw.Name(), Layout: nw.Layout(), LinearLayers: nw.LinearLayers()}, DatasetSize: 100, PlannedSteps: 1, Schedule: optim.Constant{Rate: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	o, err := p.NewOptimizer(2, optim.NewSeededNoise(1))
	if err != nil {
		t.Fatal(err)
	}
	return o.(*Optimizer).cfg
}

// The Eq. 7 controller's σ_l follows |L0|·‖ã‖ of the batch: scaling the inputs of the second
// step up makes it run away, and the optimizer warns once per layer whose σ_l passed
// RunawayFactor× its first value. A fixed σ_l never warns.
func TestControllerRunawayWarns(t *testing.T) {
	nw := steptest.NewNetwork(t, models.Spec{Kind: "mlp", Input: []int{6}, Classes: 4, Hidden: []int{5}, Activation: "gelu"}, 9)
	info := steptest.Drawn(data.SchemePoissonWithRejection, 400, 20, 10, 0)
	for _, c := range []struct {
		name        string
		sigma       float64 // 0: the controller
		scales      []float32
		warnings    int
		firstLayers bool // the first layer's σ_l ran away
	}{
		{"steady controller", 0, []float32{1, 1, 1}, 0, false},
		{"runaway controller", 0, []float32{1, 1000, 1000}, 2, true}, // both layers, once each
		{"fixed σ_l", 1, []float32{1, 1000, 1000}, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			o, err := New(Config{Copies: 2, NoiseMultiplier: 1, ClipNorm: 1, Sigma: c.sigma, SigmaFloor: 1e-6,
				Schedule: optim.Constant{Rate: 1e-9}, Warnf: func(f string, a ...any) { got = append(got, fmt.Sprintf(f, a...)) }}, optim.NewSeededNoise(3))
			if err != nil {
				t.Fatal(err)
			}
			for k, s := range c.scales {
				b := steptest.SyntheticBatch(23, 6, optim.NewSeededNoise(uint64(k)))
				for i := range b.X {
					b.X[i] *= s
				}
				if _, err := o.Step(nw, b, info); err != nil {
					t.Fatal(err)
				}
			}
			if len(got) != c.warnings {
				t.Fatalf("%d warnings %q, want %d", len(got), got, c.warnings)
			}
			if o.SigmaRanAway(0) != c.firstLayers {
				t.Errorf("SigmaRanAway(0) = %v, want %v", o.SigmaRanAway(0), c.firstLayers)
			}
			for _, w := range got {
				if !strings.Contains(w, "controller: fixed") || !strings.Contains(w, "first value") {
					t.Errorf("warning %q does not name the fix", w)
				}
			}
		})
	}
}
