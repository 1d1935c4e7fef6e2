package rdp

import (
	"slices"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// The grid holds dp_accounting's large orders, 1024 included, in increasing order, and adding
// 1024 never raised ε (ε is a minimum over the grid) while it lowers ε where the optimum order
// is above 512.
func TestDefaultOrdersHoldLargeOrders(t *testing.T) {
	o := DefaultOrders()
	for _, a := range []float64{1.25, 1.5, 20, 63, 100, 128, 256, 512, 1024} {
		if !slices.Contains(o, a) {
			t.Errorf("DefaultOrders lacks order %v", a)
		}
	}
	if !slices.IsSorted(o) || len(slices.Compact(slices.Clone(o))) != len(o) {
		t.Error("DefaultOrders is not strictly increasing")
	}
	without := slices.DeleteFunc(slices.Clone(o), func(a float64) bool { return a > 512 })
	lowered := false
	for _, c := range []struct {
		q, sigma float64
		steps    int
		delta    float64
	}{
		{256.0 / 60000, 1.1, 60 * 234, 1e-5}, {0.01, 4, 10, 1e-5}, {0.001, 20, 1, 1e-10},
		{0.05, 1, 30, 1e-5}, {1, 50, 1, 1e-12}, {0.0001, 30, 5, 1e-12},
	} {
		eps := func(orders []float64) float64 {
			a, err := NewWithOptions(accounting.Run{}, Options{Orders: orders})
			if err != nil {
				t.Fatal(err)
			}
			s := accounting.Step{Mechanism: accounting.Gaussian, Sampling: accounting.Poisson, Neighbouring: accounting.AddRemove,
				NoiseMultiplier: c.sigma, SampleRate: c.q, Sensitivity: 1, Count: c.steps}
			if c.q == 1 {
				s.Sampling = accounting.FullBatch
			}
			if err := a.Compose(s); err != nil {
				t.Fatal(err)
			}
			g, err := a.Epsilon(c.delta)
			if err != nil {
				t.Fatal(err)
			}
			return g.Epsilon
		}
		now, before := eps(o), eps(without)
		if now > before {
			t.Errorf("%+v: ε %v with 1024 in the grid, %v without", c, now, before)
		}
		lowered = lowered || now < before
	}
	if !lowered {
		t.Error("order 1024 lowered ε in none of the cases: add one whose optimal order is above 512")
	}
}
