package convergent

import (
	"math"
	"testing"

	"github.com/dptrain/dptrain/accounting"
)

// TestFigure1 checks ε(α)/α against the reading's reproduced Figure-1 table (§8.1): u = 0.08,
// σ = 1, composition 0.0032·T, plateaus 0.273172 (non-convex), 0.160062 (convex) and 0.066659
// (strongly convex).
func TestFigure1(t *testing.T) {
	tests := []struct {
		conv accounting.Convexity
		T    int
		want float64
		tau  int // −1: not given
	}{
		{accounting.NonConvex, 1, 0.0032, 0},
		{accounting.NonConvex, 10, 0.0320, 0},
		{accounting.NonConvex, 85, 0.2720, 0},
		{accounting.NonConvex, 86, 0.273172, 77},
		{accounting.NonConvex, 100, 0.273172, 91},
		{accounting.NonConvex, 300, 0.273172, -1},
		{accounting.Convex, 50, 0.1600, 0},
		{accounting.Convex, 60, 0.160062, 47},
		{accounting.Convex, 100, 0.160062, 87},
		{accounting.Convex, 1000, 0.160062, -1},
		{accounting.StronglyConvex, 10, 0.031649, 1},
		{accounting.StronglyConvex, 20, 0.052768, 8},
		{accounting.StronglyConvex, 30, 0.061620, -1},
		{accounting.StronglyConvex, 50, 0.066031, -1},
		{accounting.StronglyConvex, 60, 0.066439, -1},
		{accounting.StronglyConvex, 86, 0.066645, -1},
		{accounting.StronglyConvex, 100, 0.066656, 87},
		{accounting.StronglyConvex, 200, 0.066659, -1},
	}
	for _, tt := range tests {
		a, err := NewFullBatch(figure1Run(tt.conv), Options{})
		if err != nil {
			t.Fatal(err)
		}
		mustCompose(t, a, noisyStep(accounting.FullBatch, 1, 0.1, 5, 5, tt.T))
		got, tau := a.Rho()
		t.Logf("%-16s T=%4d want %.6f got %.6f (τ=%d)", tt.conv, tt.T, tt.want, got, tau)
		if math.Abs(got-tt.want) > 5e-7+1e-5*tt.want {
			t.Errorf("%s T=%d: ρ = %.7f, want %.6f", tt.conv, tt.T, got, tt.want)
		}
		if tt.tau >= 0 && tau != tt.tau {
			t.Errorf("%s T=%d: cut τ = %d, want %d", tt.conv, tt.T, tau, tt.tau)
		}
	}
}
