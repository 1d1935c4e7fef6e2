package models

// BLAS names the BLAS implementation the tensors of this binary use: "openblas" when built with
// the openblas tag (cgo, libopenblas), "gonum" (pure Go) otherwise.
func BLAS() string { return blasName }
