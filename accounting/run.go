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

	// The constants of the block-wise hidden-state analyses (DP-MBCD: Chen & Liu, "Hidden State Differential Private Mini-Batch BCD", Theorem 4.6), which a
	// config reaches through its algorithm's declared Run.
	//
	// SmoothnessPerRecord says the blocks' smoothness constants differ and every record
	// declares its block's β (Step.Smoothness); Smoothness must then be 0. They are never
	// folded into one maximum: a larger β can make a contraction constant such as
	// L_F = |1 − ηβ| smaller, so a maximum would under-report ε.
	SmoothnessPerRecord bool
	// ProxLipschitz is L_T, the Lipschitz constant of the proximal map; 0 means 1 (any convex
	// prox is non-expansive), 1/(1+ηλ_r) for an l2 prox of strength λ_r.
	ProxLipschitz float64
	// GradientLipschitz is a user-declared L_F of every step's gradient map (the paper's
	// Theorem 4.6 input); 0 derives it from the smoothness. Certified modes refuse it.
	GradientLipschitz float64
	// InitialLSIInverse is 1/c_0 of the initial distribution: 0 for a data-independent point
	// mass, s0² for N(0, s0²·I).
	InitialLSIInverse float64
}
