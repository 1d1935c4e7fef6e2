package dpsgld

// Decreasing is DP-SGLD's decreasing schedule η_k = 1/(2β + λk/2), k ≥ 0 (Ryffel, Bach &
// Pointcheval, Corollary 3.3; η_0 = 1/(2β)), for a β-smooth, λ-strongly convex loss.
type Decreasing struct {
	Smoothness, StrongConvexity float64
}

// StepSize implements optim.Schedule.
func (s Decreasing) StepSize(k int) float64 {
	return 1 / (2*s.Smoothness + s.StrongConvexity*float64(k)/2)
}
