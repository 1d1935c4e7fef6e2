package modes

import (
	"slices"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

func TestRegistry(t *testing.T) {
	names := Names()
	for _, want := range []string{"rdp", "pld", "gdp", "modelmix", "sgld", "mbcd", "ulr", "ulr-simplified"} {
		if !slices.Contains(names, want) {
			t.Errorf("mode %q missing from %v", want, names)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("names not sorted: %v", names)
	}
	// The composition accountants accept any run and answer for a plain Poisson DP-SGD run;
	// every mode either builds or says why, and a built one reports under its own name.
	run := accounting.Run{UpdateRule: "sgd", DatasetSize: 1000}
	step := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, Neighbouring: accounting.AddRemove,
		NoiseMultiplier: 1, SampleRate: 0.01, Sensitivity: 1, NoiseStd: 1, Count: 100}
	for _, n := range names {
		a, err := New(n, run)
		if err != nil {
			continue
		}
		if a.Name() == "" {
			t.Errorf("%s: empty name", n)
		}
		if n == "rdp" || n == "pld" || n == "gdp" {
			if err := a.Compose(step); err != nil {
				t.Errorf("%s refused plain DP-SGD: %v", n, err)
			}
			if g, err := a.Epsilon(1e-5); err != nil || !(g.Epsilon > 0) {
				t.Errorf("%s: ε %v, %v", n, g.Epsilon, err)
			}
		}
	}
	if _, err := New("dp-magic", run); err == nil {
		t.Error("unknown mode accepted")
	}
}
