package dpsgld

import (
	"math"
	"testing"
)

// TestDecreasing checks the decreasing schedule η_k = 1/(2β + λk/2) (Ryffel, Bach &
// Pointcheval, Corollary 3.3) with β = 10 and λ = 0.01: its first and 1000th step sizes, and
// the sum over k = 0..999, 44.63371064.
func TestDecreasing(t *testing.T) {
	s := Decreasing{Smoothness: 10, StrongConvexity: 0.01}
	if got := s.StepSize(0); math.Abs(got-0.05) > 1e-12 {
		t.Errorf("η_0 = %v, want 0.05", got)
	}
	if got := s.StepSize(999); math.Abs(got-1/24.995) > 1e-12 {
		t.Errorf("η_999 = %v, want 1/24.995", got)
	}
	var sum float64
	for k := range 1000 {
		sum += s.StepSize(k)
	}
	if math.Abs(sum-44.63371064) > 1e-7 {
		t.Errorf("Σ η_k = %.10f, want 44.63371064", sum)
	}
}
