package kernels

import "golang.org/x/sys/cpu"

// haveDenseFMA reports whether this CPU runs denseFMA (AVX2 and FMA3), and haveDense512 whether
// it also runs denseFMA512 (AVX-512F); both are read once, at start-up. The two kernels give
// the same bits, so which one ran never shows in a result.
var (
	haveDenseFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA
	haveDense512 = haveDenseFMA && cpu.X86.HasAVX512F
)

//go:noescape
func denseFMA(x *float32, ldx int, w *float32, ldw int, y *float32, ldy int, rows, d, blocks int)

//go:noescape
func denseFMA512(x *float32, ldx int, w *float32, ldw int, y *float32, ldy int, rows, d, blocks int)
