// Package audit turns the outcome of a one-run privacy audit into a statistically valid lower
// bound on ε: the bound of Steinke, Nasr and Jagielski, "Privacy Auditing with One (1) Training
// Run" (NeurIPS 2023).
//
// m canaries are each included in the training data independently with probability 1/2 (the
// secret S ∈ {−1, +1}^m); after one training run an auditor scores every canary, guesses
// "included" for the k₊ highest scores, "excluded" for the k₋ lowest and abstains on the rest.
// If the run is (ε, δ)-DP, the number W of correct guesses among the r = k₊ + k₋ made is
// stochastically dominated as the paper's main theorem and its (ε, δ) corollary state (the number of
// correct guesses of ε-DP randomised response, plus a δ term), so observing v correct guesses
// rejects every ε whose p-value is below 1 − confidence; the largest rejected ε is the lower
// bound. An audit can only refute a claimed ε, never certify one.
//
// The package is pure maths: it depends only on the standard library.
package audit
