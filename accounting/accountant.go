package accounting

// Label says how far an ε can be trusted.
type Label string

const (
	// Certified: the theorem's assumptions were declared and checked; the bound is an upper
	// bound on the true ε (up to the stated numerical tolerance, rounded against privacy).
	Certified Label = "certified"
	// Paper: the paper's formula as printed, where the paper's proof or assumptions have a
	// gap (each accountant's package documentation names it).
	Paper Label = "paper"
	// Approximate: an estimate, not a bound (for example the CLT-based GDP accountant).
	Approximate Label = "approximate"
)

// Guarantee is an (ε, δ) statement from one accountant.
type Guarantee struct {
	Accountant string
	Label      Label
	Epsilon    float64
	Delta      float64
	// Order is the Rényi order α at which the RDP bound was converted, 0 if not an RDP
	// accountant.
	Order float64
}

// Accountant composes step records and reports (ε, δ) guarantees.
//
// Compose returns an error, and leaves the accountant unchanged, when the step is outside what
// its theorem covers. Epsilon never returns NaN or Inf with a nil error.
type Accountant interface {
	Name() string
	Label() Label
	Compose(s Step) error
	Epsilon(delta float64) (Guarantee, error)
	// Clone returns an independent copy, used to ask "what if one more step ran?".
	Clone() Accountant
}
