package rdp

// DefaultOrders returns the Rényi orders the accountant evaluates (793 orders):
//
//	1.01 to 2 in steps of 0.01, 2.05 to 10 in steps of 0.05, 10.25 to 20 in steps of 0.25,
//	every integer from 21 to 512, and 1024.
//
// It contains dp_accounting's default grid (1.25 to 20 in steps of 0.25, then 20 to 100 and
// up to 256, 512 and 1024) and Opacus's (1.1 to 10.9 in steps of 0.1, 12 to 63), so ε is never
// looser than theirs for a run all cover: ε is a minimum over the grid, so an order added to
// it can only lower ε. Composition costs one multiply-add per order and
// step, so the grid's size only matters once, when a mechanism's curve is first computed.
func DefaultOrders() []float64 {
	o := make([]float64, 0, 800)
	for k := 1; k <= 100; k++ {
		o = append(o, 1+float64(k)/100)
	}
	for k := 41; k <= 200; k++ {
		o = append(o, float64(k)/20)
	}
	for k := 41; k <= 80; k++ {
		o = append(o, float64(k)/4)
	}
	for a := 21; a <= 512; a++ {
		o = append(o, float64(a))
	}
	// Very large orders win for tiny per-step privacy loss (large σ, small q, few steps).
	return append(o, 1024)
}
