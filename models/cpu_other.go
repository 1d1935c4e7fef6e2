//go:build !amd64

package models

// cpu512 is false off amd64.
func cpu512() bool { return false }
