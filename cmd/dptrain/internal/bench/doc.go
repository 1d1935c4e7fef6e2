// Package bench measures the cost of privacy on this machine: the drivers behind
// "dptrain bench". Throughput times a non-private step against a DP-SGD step on the same model
// and batch; MBCD times a DP-MBCD step (Chen & Liu, "Hidden State Differential Private
// Mini-Batch Block Coordinate Descent", Algorithm 4 with Eq. 14) against DP-SGD; ULR times
// DP-ULR steps (Feng et al., "Forward Learning with Differential Privacy", Algorithm 1) against
// DP-SGD. Every driver runs on synthetic data with seeded noise: its timings are measurements,
// never privacy claims.
package bench
