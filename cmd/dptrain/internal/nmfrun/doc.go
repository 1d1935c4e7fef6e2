// Package nmfrun runs the mini-batch NMF experiment behind "dptrain nmf": DP-MBCD against
// DP-SGD and their non-private baselines on a low-rank matrix (Chen & Liu, "Hidden State
// Differential Private Mini-Batch Block Coordinate Descent", Appendix D.1.1, Table 2).
//
// It owns every number of the experiment that carries a privacy claim: the σ of each method
// (bisected against the paper's hidden-state RDP, mbcd, or against mbcd-certified, or given in
// closed form by composition for DP-SGD), and the guarantees printed for each cell (every mbcd
// accountant that covers the run, plus the composition bound, which needs no hidden-state
// assumption). Batches are a shuffle-once partition visited cyclically.
package nmfrun
