// Package ulr is the accountant of DP-ULR's Sampled-with-Rejection Gaussian mechanism
// (Feng, Zhang, Jiang, Peng & Xu, "Forward Learning with Differential Privacy", Definition 3.4,
// Theorems 3.5, 3.6 and B.1): a Poisson(q) batch redrawn while it
// holds fewer than N_B examples, then a Gaussian release with noise multiplier σ0.
//
// Each step costs the rejection term plus the sampled Gaussian's RDP. Two modes:
//
//   - ulr: log1p(x) with x = q·p(N_B−1; N̄, q)/(1−P(N_B−1; N̄, q)) (Eq. 38 before the paper's
//     ln(1+x) ≤ x), plus the exact sampled-Gaussian RDP of Mironov, Talwar & Zhang (2019), valid
//     for every σ0 and order;
//   - ulr-simplified: the printed Eq. (9)/(10), x + 2q²α/σ0², at the orders where Theorem 3.5
//     (Mironov, Talwar & Zhang 2019, Theorem 11) holds: q ≤ 1/5, σ0 ≥ 4 and α in its range.
//
// A step that declares the Gaussian mechanism (an explicit isotropic N(0, σ0²C²) on a clipped
// sum) is labelled certified; a step that declares the sampled-with-rejection mechanism (DP-ULR's
// likelihood-ratio noise, whose variance model is the paper's small-σ approximation, Proposition 3.2, with Gaussianity from App. A.3) makes
// every later ε of the accountant paper.
package ulr
