package convergent

// Options tunes the numerical side of the bounds. The zero value is the recommended default.
type Options struct {
	// GridSize is the number of intervals M of the dynamic-programming grid used for Hölder
	// gradients (Theorem 3.7) and subsampling (Theorem 3.12); 0 means 320. A finer grid only
	// tightens the bound (every grid path is feasible).
	GridSize int
	// Orders are the integer Rényi orders of the subsampled bound; nil means DefaultOrders.
	Orders []int
	// PaperLiteral uses Theorem 3.12's printed noise argument β·σ·b/(2ηK) instead of the
	// derivation's √β·σ·b/(2ηK) (looser but valid: Z_t has standard deviation √β_t·σ, Chien & Li Eq. 19).
	PaperLiteral bool
	// ExactSGM evaluates S_α in the direction of Definition 3.11 by quadrature instead of the
	// conservative standard formula, which bounds it from above (Theorem 3.12's proof is a sketch).
	ExactSGM bool
}

// DefaultOrders are the integer Rényi orders of the subsampled bound.
var DefaultOrders = []int{2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 24, 32, 48, 64}

func (o Options) gridSize() int {
	if o.GridSize > 0 {
		return o.GridSize
	}
	return 320
}

func (o Options) orders() []int {
	if len(o.Orders) > 0 {
		return o.Orders
	}
	return DefaultOrders
}
