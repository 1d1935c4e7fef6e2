//go:build !openblas

package models

const blasName = "gonum"

// blasKernel is gonum's pure-Go kernels' name.
func blasKernel() string { return "go" }
