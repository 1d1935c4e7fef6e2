// Package benchmarks holds Go benchmarks of dptrain's hot paths and the drivers that reproduce
// the papers' tables; results and plots are written under benchmarks/results.
//
// torch_compare.py times dptrain's DP-SGD and non-private steps (dptrain bench throughput)
// against PyTorch's non-private step on the same model and batch, in interleaved rounds on the
// same machine; make bench runs it (Debian's python3-torch; without it, the torch column is
// skipped with a message).
package benchmarks
