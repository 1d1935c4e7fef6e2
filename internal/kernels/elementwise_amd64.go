package kernels

import "golang.org/x/sys/cpu"

// haveVecAVX2 reports whether the element-wise vector kernels run on this CPU (AVX2); read
// once, at start-up.
var haveVecAVX2 = cpu.X86.HasAVX2

// The vector kernels take n > 0 elements, n a multiple of 8.

//go:noescape
func reluVec(x, y *float32, n int)

//go:noescape
func reluGradVec(x, dy, dx *float32, n int)

//go:noescape
func addVec(y, a *float32, n int)

//go:noescape
func add2Vec(y, a, b *float32, n int)

//go:noescape
func addScaled64Vec(s *float64, c float32, v *float32, n int)

//go:noescape
func maxPairsVec(a, b, m *float32, k, i *int32, n int, base, c int32)

//go:noescape
func maxRowsVec(y *float32, arg *int32, pm, cm *float32, pk, ck, pi, ci *int32, n int)
