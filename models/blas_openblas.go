//go:build openblas

package models

import (
	"gonum.org/v1/gonum/blas/blas32"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/netlib/blas/netlib"
	"gorgonia.org/gorgonia"
)

const blasName = "openblas"

// init routes gorgonia's, and gonum's float32 and float64, BLAS calls to OpenBLAS. The choice
// is made at build time (the openblas tag), so this is configuration of the binary, not state.
func init() {
	impl := netlib.Implementation{}
	gorgonia.Use(impl)
	blas32.Use(impl)
	blas64.Use(impl)
}
