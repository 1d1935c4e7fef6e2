package kernels

import "golang.org/x/sys/cpu"

// haveChanAVX reports whether the per-channel vector kernels run on this CPU (AVX); read once,
// at start-up.
var haveChanAVX = cpu.X86.HasAVX

// The vector kernels take 16 channels starting at their pointers' element, with row stride ld
// (in elements), over rows ≥ 1 rows.

//go:noescape
func chanSum16(x *float32, ld, rows int, acc *float64)

//go:noescape
func chanSqDev16(x *float32, ld, rows int, mean, acc *float64)

//go:noescape
func chanNorm16(x, xh, y *float32, ld, rows int, mean, inv *float64, gamma, beta *float32)

//go:noescape
func chanDots16(xh, dy *float32, ld, rows int, sg, sb *float64)

//go:noescape
func chanDx16(xh, dy, dx *float32, ld, rows int, a, b, d *float32, add int)
