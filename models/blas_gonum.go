//go:build !openblas

package models

const blasName = "gonum"
