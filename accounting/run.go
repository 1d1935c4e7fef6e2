package accounting

// Convexity is the class of loss a hidden-state bound assumes.
type Convexity string

const (
	NonConvex      Convexity = "non-convex"
	Convex         Convexity = "convex"
	StronglyConvex Convexity = "strongly-convex"
)

// Run holds the run-level settings an accountant checks before it accepts any step: what is
// released, the update rule, and the constants of the loss and domain. They are declared by the
// trainer from its configuration (never inferred from data) and validated by each accountant
// against the theorem it implements.
type Run struct {
	// LastIterateOnly is true when only the final model is released (the hidden-state
	// assumption). Hidden-state accountants refuse a run without it.
	LastIterateOnly bool
	// UpdateRule names the post-processing of the noisy gradient: "sgd", "momentum", "adam".
	// Hidden-state bounds need "sgd": state that carries noisy gradients breaks them.
	UpdateRule string
	// DatasetSize is n.
	DatasetSize int

	// Loss constants, as the analyses name them: Lipschitz constant (gradient norm bound, or
	// the clip norm), smoothness β (or Hölder constant with exponent HolderExponent λ ∈ (0,1],
	// 1 meaning smooth), strong convexity m.
	Convexity       Convexity
	Lipschitz       float64
	Smoothness      float64
	HolderExponent  float64
	StrongConvexity float64
	// DomainDiameter is the diameter of the set the iterates are projected onto; 0 means no
	// projection.
	DomainDiameter float64
}
