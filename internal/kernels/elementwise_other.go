//go:build !amd64

package kernels

// haveVecAVX2 is false off amd64: the scalar loops run every element.
const haveVecAVX2 = false

func reluVec(x, y *float32, n int)                            { panic("unreachable") }
func reluGradVec(x, dy, dx *float32, n int)                   { panic("unreachable") }
func addVec(y, a *float32, n int)                             { panic("unreachable") }
func add2Vec(y, a, b *float32, n int)                         { panic("unreachable") }
func addScaled64Vec(s *float64, c float32, v *float32, n int) { panic("unreachable") }
