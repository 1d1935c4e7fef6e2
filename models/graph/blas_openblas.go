//go:build openblas

package graph

import (
	"gonum.org/v1/netlib/blas/netlib"
	"gorgonia.org/gorgonia"
)

// init routes gorgonia's BLAS calls to OpenBLAS, as package models routes gonum's. The choice
// is made at build time (the openblas tag), so this is configuration of the binary, not state.
func init() {
	gorgonia.Use(netlib.Implementation{})
}
