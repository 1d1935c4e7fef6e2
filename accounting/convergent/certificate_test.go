package convergent

import (
	"math"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// TestCertificate verifies the plateau certificates independently: the constraint
// Σ c^{−k}·a_k ≥ D_τ with D_τ recomputed from Lemma 3.5, and the objective of Theorem 3.1
// recomputed from (a, β); and compares the allocations with the reading's (§8.1).
func TestCertificate(t *testing.T) {
	tests := []struct {
		conv   accounting.Convexity
		c      float64
		active int
		shifts []float64 // leading shifts of the reading, if given
	}{
		{accounting.NonConvex, 1.1, 9, []float64{0.2600, 0.2291, 0.2010, 0.1755, 0.1522, 0.1311, 0.1119, 0.0945, 0.0786}},
		{accounting.Convex, 1, 13, []float64{0.0769, 0.0769, 0.0769}},
		// s = 13 steps after the cut, the first six unshifted (β = 1), then 0.0013 … 0.0729.
		{accounting.StronglyConvex, 0.9, 7, []float64{0, 0, 0, 0, 0, 0, 0.0013}},
	}
	for _, tt := range tests {
		a, _ := NewFullBatch(figure1Run(tt.conv), Options{})
		mustCompose(t, a, noisyStep(accounting.FullBatch, 1, 0.1, 5, 5, 400))
		cert, err := a.Certificate()
		if err != nil {
			t.Fatal(err)
		}
		// Lemma 3.5 recursion, recomputed.
		u, D := 0.08, 0.0
		for range cert.Tau {
			D = math.Min(math.Min(tt.c*D+u, D+0.4), 1)
		}
		if math.Abs(D-cert.Distance) > 1e-9 {
			t.Errorf("%s: D_τ = %v, recomputed %v", tt.conv, cert.Distance, D)
		}
		absorbed, obj, active := 0.0, 0.0, 0
		for k, s := range cert.Shifts {
			absorbed += math.Pow(tt.c, -float64(k+1)) * s
			b := cert.Betas[k]
			obj += u * u / b
			if s > 0 {
				obj += s * s / (1 - b)
				active++
			}
		}
		if absorbed < D*(1-1e-9) {
			t.Errorf("%s: shifts absorb %v < D_τ = %v: infeasible", tt.conv, absorbed, D)
		}
		if got := obj / 2; math.Abs(got-cert.Rho) > 1e-9*cert.Rho {
			t.Errorf("%s: recomputed objective %v, certificate ρ %v", tt.conv, got, cert.Rho)
		}
		if active != tt.active {
			t.Errorf("%s: %d active steps, want %d", tt.conv, active, tt.active)
		}
		lead := cert.Shifts
		if tt.conv == accounting.StronglyConvex {
			if n, last := len(lead), lead[len(lead)-1]; n != 13 || math.Abs(last-0.0729) > 6e-5 {
				t.Errorf("strongly convex: %d steps after the cut ending with shift %.4f, want 13 ending with 0.0729", n, last)
			}
		}
		for k, w := range tt.shifts {
			if math.Abs(lead[k]-w) > 6e-5 {
				t.Errorf("%s: shift %d = %.4f, want %.4f", tt.conv, k, lead[k], w)
			}
		}
		t.Logf("%s: τ=%d s=%d D_τ=%.4f shifts %.4f β %.4f", tt.conv, cert.Tau, len(cert.Shifts), D, lead[:min(len(lead), 13)], cert.Betas[:min(len(cert.Betas), 3)])
	}
}
