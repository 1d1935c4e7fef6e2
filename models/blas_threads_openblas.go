//go:build openblas

package models

// void openblas_set_num_threads(int);
// char* openblas_get_corename(void);
import "C"

import "os"

// init runs OpenBLAS on one thread unless OPENBLAS_NUM_THREADS or OMP_NUM_THREADS says
// otherwise: the conv path's own ops split the batch across goroutines (GOMAXPROCS), and two
// OpenBLAS threads spin in sched_yield between GEMMs, taking the core those goroutines need.
// Measured with `dptrain bench throughput --model cnn --batch 256` (DP-SGD step), one thread
// against two in 9 interleaved runs at load average 10.6–11.5 on 2 cores: medians 60.9 against
// 128.7 ms; on an idle machine, before the conv path's own ops, 84 against 91 ms. The MLP's
// large GEMMs were faster on two threads when idle (4.7 against 6.0 ms a step): set
// OPENBLAS_NUM_THREADS=2 for it on an idle machine.
func init() {
	if os.Getenv("OPENBLAS_NUM_THREADS") == "" && os.Getenv("OMP_NUM_THREADS") == "" {
		C.openblas_set_num_threads(1)
	}
}

// blasKernel is the core type whose kernels OpenBLAS chose for this CPU at start-up (for
// example Haswell, SkylakeX, Zen; Prescott is its generic SSE3 fallback).
func blasKernel() string { return C.GoString(C.openblas_get_corename()) }
