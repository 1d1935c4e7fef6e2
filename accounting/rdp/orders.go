package rdp

// DefaultOrders returns the Rényi orders the accountant evaluates: 1.05 to 10 in steps of
// 0.05, 10.5 to 20 in steps of 0.5, every integer from 21 to 64, then a sparse tail up to 1024.
// It is finer than dp_accounting's default grid (1.1 to 10.9 in steps of 0.1, 12 to 63, 128,
// 256, 512), so ε is never looser for a run both cover.
func DefaultOrders() []float64 {
	var o []float64
	for k := 1; k <= 180; k++ {
		o = append(o, 1+float64(k)/20)
	}
	for k := 21; k <= 40; k++ {
		o = append(o, float64(k)/2)
	}
	for a := 21; a <= 64; a++ {
		o = append(o, float64(a))
	}
	return append(o, 72, 80, 96, 128, 160, 192, 256, 384, 512, 768, 1024)
}
