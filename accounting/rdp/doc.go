// Package rdp is the Rényi-DP composition accountant for the Gaussian mechanism, full batch or
// Poisson-subsampled: the RDP of each distinct mechanism is computed once at a grid of orders
// (integer and fractional, Mironov, Talwar & Zhang 2019, "Rényi Differential Privacy of the
// Sampled Gaussian Mechanism", Sections 3.3 and 3.4), composition adds the curves, and ε is
// the best conversion over the grid (accounting.RDPToEpsilon).
//
// It is the standard (composition) accountant: every intermediate iterate may be released.
package rdp
