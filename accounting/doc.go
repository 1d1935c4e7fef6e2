// Package accounting turns the records of what a private training run released into privacy
// guarantees.
//
// The privacy contract: an optimizer declares, an accountant
// interprets. Every step of training emits a Step describing the mechanism it ran (its noise,
// sensitivity, sampling scheme and the constants an analysis needs); every Accountant composes
// those records and reports ε for a given δ. An accountant whose theorem does not cover the
// declared run returns an error, never a number, and every reported ε carries a Label saying
// whether the theorem's assumptions were checked (Certified) or the paper's formula is used as
// printed (Paper) or the value is an approximation.
//
// This package holds the shared vocabulary (Step, Run, Accountant, Label), the conversion from
// Rényi DP to (ε, δ)-DP, noise calibration and the live multiplexer. The accountant families
// live in sub-packages; this package depends on nothing of dptrain's and only on the standard
// library and gonum.
package accounting
