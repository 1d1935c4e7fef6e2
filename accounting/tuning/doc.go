// Package tuning accounts for private hyperparameter selection: a search that runs a random
// number K of candidate training runs, each differentially private, and releases only the best
// one (its output and score), following Papernot & Steinke, "Hyperparameter Tuning with Renyi
// Differential Privacy" (ICLR 2022).
//
// A candidate is given by its Rényi DP curve ε(λ) over orders λ > 1 (for DP-SGD, the composed
// curve of one training run: SampledGaussianCurve, or an rdp.Accountant's Curve). The search's
// RDP depends on the law of K:
//
//   - the truncated negative binomial D_{η,γ}, η ∈ (−1, ∞), γ ∈ (0, 1) (Definition 1; η = 0 is
//     the logarithmic distribution, η = 1 the geometric), by Theorem 2:
//     ε'(λ) = ε(λ) + (1+η)(1 − 1/λ̂)ε(λ̂) + (1+η)·log(1/γ)/λ̂ + log(E[K])/(λ−1), for any λ̂ ≥ 1;
//   - Poisson(μ), μ > 0, by Theorem 6: ε'(λ) = ε(λ) + μ·δ̂ + log(μ)/(λ−1), where the candidate is
//     (ε̂, δ̂)-DP with e^ε̂ ≤ 1 + 1/(λ−1).
//
// RDP and RDPFromCurve give the search's RDP curve, Epsilon its (ε, δ) guarantee with the
// conversion the rdp accountant uses, Cost the ε that tuning adds over one candidate, and
// CalibrateSampledGaussian the candidate's noise multiplier that makes the whole search meet a
// target (ε, δ); Distribution.Sample draws K. Every value is an upper bound rounded against privacy: λ̂ is the best of a
// grid (1 and the orders), never an interpolation; δ̂ is rounded up and ε̂ down.
//
// What the search must do for the theorems to hold, which this package cannot check:
//   - draw K from the stated distribution, independently of the data, and run exactly K
//     candidates (for Poisson, K = 0 releases nothing);
//   - run every candidate as an independent draw of the same randomised procedure: a
//     hyperparameter setting drawn afresh from a fixed distribution, then a private run with
//     it (the theorems assume independent, identically distributed candidates: a fixed
//     sequence of settings, or one chosen from earlier results, is not covered). The candidate
//     curve must bound every setting's run; the largest curve over the settings does;
//   - release only the best candidate under a total order on outputs (its score and model),
//     nothing about the others, not even how many ran.
//
// Guarantees carry the label accounting.Certified: the parameters are checked and the bound is
// the theorem's, given a candidate curve that bounds one run.
package tuning
