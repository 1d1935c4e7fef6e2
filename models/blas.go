package models

// BLAS names the BLAS implementation the tensors of this binary use: "openblas" when built with
// the openblas tag (cgo, libopenblas), "gonum" (pure Go) otherwise.
func BLAS() string { return blasName }

// BLASKernel names the kernels the BLAS runs on this CPU: the core type OpenBLAS chose at
// start-up from CPUID (a generic one, Prescott, on a CPU it does not know: then set
// OPENBLAS_CORETYPE, for example to Haswell or SkylakeX, to select the right kernels), or "go".
func BLASKernel() string { return blasKernel() }
