//go:build openblas

package models

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
)

const blasName = "openblas"

// init routes gonum's float32 and float64 BLAS calls to OpenBLAS (package models/graph routes
// gorgonia's). The choice is made at build time (the openblas tag), so this is configuration
// of the binary, not state.
func init() {
	impl := netlib.Implementation{}
	blas32.Use(impl)
	blas64.Use(impl)
}
