// Package gdp is the Gaussian-DP accountant of Dong, Roth & Su (2022), "Gaussian Differential
// Privacy", JRSS-B: composing T steps of the Poisson-subsampled Gaussian mechanism is
// approximately μ-GDP with
//
//	μ = √(Σ_t q_t² (e^{1/σ_t²} − 1))          (Corollary 5.4, the central limit theorem)
//
// and a μ-GDP mechanism is (ε, δ(ε))-DP with δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2)
// (Corollary 2.13). The CLT is an asymptotic statement, not a bound, so subsampled runs are
// labelled accounting.Approximate; it is known to under-estimate ε for small T or large q. Full
// batch steps are exactly μ-GDP with μ = √T/σ, and a run of only full-batch steps is labelled
// accounting.Certified.
package gdp
