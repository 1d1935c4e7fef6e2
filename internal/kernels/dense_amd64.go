package kernels

import "golang.org/x/sys/cpu"

// haveDenseFMA reports whether this CPU runs denseFMA (AVX2 and FMA3); it is read once, at
// start-up, so that one process runs every example through the same kernel.
var haveDenseFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func denseFMA(x *float32, ldx int, w *float32, ldw int, y *float32, ldy int, rows, d, blocks int)
