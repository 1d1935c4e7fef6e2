//go:build !amd64

package kernels

// haveVecAVX2 is false off amd64: the scalar loops run every element.
const haveVecAVX2 = false

func reluVec(x, y *float32, n int)                            { panic("unreachable") }
func reluGradVec(x, dy, dx *float32, n int)                   { panic("unreachable") }
func addVec(y, a *float32, n int)                             { panic("unreachable") }
func add2Vec(y, a, b *float32, n int)                         { panic("unreachable") }
func addScaled64Vec(s *float64, c float32, v *float32, n int) { panic("unreachable") }

func maxPairsVec(a, b, m *float32, k, i *int32, n int, base, c int32) { panic("unreachable") }
func maxRowsVec(y *float32, arg *int32, pm, cm *float32, pk, ck, pi, ci *int32, n int) {
	panic("unreachable")
}
