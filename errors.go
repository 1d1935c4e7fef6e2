package dptrain

import (
	"fmt"
	"strings"

	"github.com/dptrain/dptrain/accounting"
)

// ConfigError is a setting that a plan refuses (NewPlan, NewSession, MakePrivate,
// MakePrivateWithEpsilon): a value outside its range, an accountant whose theorem does not
// cover the run, a stopping accountant that is not certified, a δ that is not below 1/n. Its
// fields say what and why, so that a caller can act on them with errors.As instead of parsing
// the message.
type ConfigError struct {
	// Key is the setting, as the caller's struct (or config file) names it: "Config.Delta",
	// "Parts.Privacy.StopAccountant", "privacy.stop_accountant".
	Key string
	// Value is the value given.
	Value any
	// Accountant is the accountant the refusal is about, if any, and Label its label for this
	// run (certified, paper or approximate), when it gave one.
	Accountant string
	Label      accounting.Label
	// Theorem is the result whose assumptions are at stake, when the refusal is about one.
	Theorem string
	// Reason says what is wrong; Fix what to do about it.
	Reason string
	Fix    string
	// Certified lists the configured accountants that give a certified bound for this run:
	// the alternatives when an uncertified one was refused.
	Certified []string
	// Err is the underlying error, if any (an accountant's refusal, a sampler's): an
	// *accounting.RequirementError names the declaration fields at stake.
	Err error
	// field names a declaration field in the message as the caller does (Parts.Names).
	field func(string) string
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("dptrain: ")
	b.WriteString(e.Key)
	if e.Reason != "" {
		if !strings.HasPrefix(e.Reason, ":") {
			b.WriteString(" ")
		}
		b.WriteString(e.Reason)
	}
	if e.Err != nil && !strings.Contains(e.Reason, e.Err.Error()) {
		b.WriteString(": ")
		b.WriteString(accounting.Describe(e.Err, e.field))
	}
	if e.Fix != "" {
		b.WriteString(": ")
		b.WriteString(e.Fix)
	}
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ConfigError) Unwrap() error { return e.Err }

// LedgerError stops a Session: a step ran on the data and could not be put on record (its
// records were refused by an accountant's Compose, or the Released hook failed), or the
// optimizer or the sampler has moved without the session (steps taken, or batches drawn,
// outside it), so that the accountants no longer count every step that touched the data.
// Every later Step returns the same error: the session cannot go on, because its ε would no
// longer bound what was released.
type LedgerError struct {
	// Step is the step the error concerns: the one that ran, or the one that would have run.
	Step int
	// Composed is the number of steps the session has composed; OptimizerSteps and
	// SamplerDraws are what the optimizer and the sampler count (their positions when the
	// session began plus the steps it ran, when nothing went around it).
	Composed, OptimizerSteps, SamplerDraws int
	// Reason says what happened; Err is the underlying error, if any.
	Reason string
	Err    error
}

func (e *LedgerError) Error() string {
	s := fmt.Sprintf("dptrain: step %d: %s", e.Step, e.Reason)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s + "; the session has stopped and refuses further steps"
}

// Unwrap returns the underlying error.
func (e *LedgerError) Unwrap() error { return e.Err }

// theorems names the result behind each accountant (each package's documentation gives the
// details), for ConfigError.Theorem.
var theorems = map[string]string{
	"rdp":                 "Rényi DP of the sampled Gaussian mechanism (Mironov, Talwar & Zhang 2019)",
	"pld":                 "privacy loss distribution composition (Koskela, Jälkö & Honkela 2020; Doroshenko et al. 2022)",
	"gdp":                 "the central limit theorem for Gaussian DP (Dong, Roth & Su 2022, Corollary 5.4): an approximation under subsampling, not a bound",
	"modelmix":            "ModelMix's amplified RDP (Xiao, Wan & Devadas, Theorem 4.1 and Corollary 4.1)",
	"sgld":                "Ryffel, Bach & Pointcheval, Theorem 3.1 (last iterate, strongly convex smooth loss)",
	"sgld-conservative":   "Ryffel, Bach & Pointcheval, Theorem 3.1 (last iterate, strongly convex smooth loss)",
	"mbcd":                "Chen & Liu, the hidden-state log-Sobolev recursion (Lemma C.3)",
	"mbcd-certified":      "Chen & Liu, the hidden-state log-Sobolev recursion (Lemma C.3)",
	"chien-li":            "Chien & Li, convergent privacy loss of noisy SGD (last iterate)",
	"output-perturbation": "Chien & Li, convergent privacy loss of noisy SGD (output perturbation)",
	"ulr":                 "Feng et al., Theorems 3.5 and 3.6 (sampled-with-rejection Gaussian)",
	"ulr-simplified":      "Feng et al., Eq. (9) (sampled-with-rejection Gaussian, simplified)",
}
