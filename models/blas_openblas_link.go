//go:build openblas

package models

// The netlib binding declares the CBLAS functions but not the library that provides them: link
// OpenBLAS here so that "go build -tags openblas" works without setting CGO_LDFLAGS.

// #cgo LDFLAGS: -lopenblas
import "C"
