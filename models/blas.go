package models

// BLAS names the BLAS implementation the tensors of this binary use: "openblas" when built with
// the openblas tag (cgo, libopenblas), "gonum" (pure Go) otherwise.
func BLAS() string { return blasName }

// BLASKernel names the kernels the BLAS runs on this CPU: the core type OpenBLAS chose at
// start-up from CPUID (a generic one, Prescott, on a CPU it does not know: then set
// OPENBLAS_CORETYPE, for example to Haswell or SkylakeX, to select the right kernels), or "go".
func BLASKernel() string { return blasKernel() }

// BLASAdvice says how to run the BLAS on faster kernels than it chose for this CPU, or is
// empty. OpenBLAS picks its kernels from the CPU's family and model, so a release older than
// the CPU runs it on an older core's kernels: OpenBLAS 0.3.21 takes AMD's Zen 5 (family 26,
// AVX-512 on 512-bit units) for a Haswell, and its GEMMs run at half their speed (the 784-512-10
// MLP's DP step at batch 256 on one core: 9.0 ms on Haswell kernels, 7.2 ms with
// OPENBLAS_CORETYPE=SkylakeX). Results do not depend on it beyond float round-off in the
// products over a batch; each example's own quantities never run through these kernels'
// batch-shaped paths.
func BLASAdvice() string {
	k := BLASKernel()
	if !avx512Kernels(k) && cpu512() {
		return "OpenBLAS chose " + k + " kernels on a CPU with AVX-512: set OPENBLAS_CORETYPE=SkylakeX to run its products on AVX-512"
	}
	return ""
}

// avx512Kernels reports whether the BLAS kernel named k uses AVX-512, or is not OpenBLAS's.
func avx512Kernels(k string) bool {
	switch k {
	case "Haswell", "Zen", "Sandybridge", "Excavator", "Prescott", "Nehalem", "Core2":
		return false
	}
	return true
}
