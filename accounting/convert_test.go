package accounting

import (
	"math"
	"testing"
)

func TestRDPToEpsilonGaussian(t *testing.T) {
	// The Gaussian mechanism with noise multiplier σ composed T times has RDP T·α/(2σ²) at
	// every order. Minimising the improved conversion over a fine grid must match the
	// minimum over a much finer grid, and never be above the classic conversion.
	const sigma, T, delta = 4.0, 100.0, 1e-5
	var orders, rdp []float64
	for a := 1.01; a < 200; a += 0.01 {
		orders = append(orders, a)
		rdp = append(rdp, T*a/(2*sigma*sigma))
	}
	eps, order, err := RDPToEpsilon(orders, rdp, delta)
	if err != nil {
		t.Fatal(err)
	}
	classic, _, err := RDPToEpsilonClassic(orders, rdp, delta)
	if err != nil {
		t.Fatal(err)
	}
	if eps > classic {
		t.Errorf("improved ε %v exceeds classic %v", eps, classic)
	}
	// Independent check: evaluate the formula directly at the returned order.
	want := T*order/(2*sigma*sigma) + math.Log((order-1)/order) - (math.Log(delta)+math.Log(order))/(order-1)
	// The returned ε is rounded up: at or above the formula, by at most a relative 1e-11.
	if eps < want || eps-want > 1e-11*want {
		t.Errorf("ε = %v, formula at α=%v gives %v", eps, order, want)
	}
}

func TestRDPToEpsilonErrors(t *testing.T) {
	tests := []struct {
		name   string
		orders []float64
		rdp    []float64
		delta  float64
	}{
		{"length mismatch", []float64{2}, []float64{1, 2}, 1e-5},
		{"delta zero", []float64{2}, []float64{1}, 0},
		{"delta one", []float64{2}, []float64{1}, 1},
		{"order one", []float64{1}, []float64{1}, 1e-5},
		{"all infinite", []float64{2, 3}, []float64{math.Inf(1), math.Inf(1)}, 1e-5},
		{"nan", []float64{2}, []float64{math.NaN()}, 1e-5},
	}
	for _, tt := range tests {
		if _, _, err := RDPToEpsilon(tt.orders, tt.rdp, tt.delta); err == nil {
			t.Errorf("%s: want an error", tt.name)
		}
	}
}

func TestRoundUp(t *testing.T) {
	for _, x := range []float64{-3, -1e-300, 0, 1e-300, 0.5, 2.597, 1e300} {
		if got := RoundUp(x); !(got > x) || got-x > 1e-11*math.Abs(x)+1e-300 {
			t.Errorf("RoundUp(%v) = %v, want just above", x, got)
		}
	}
	if !math.IsInf(RoundUp(math.Inf(1)), 1) {
		t.Error("RoundUp(+Inf) is not +Inf")
	}
}
