package models

import "golang.org/x/sys/cpu"

// cpu512 reports whether the CPU and the OS run the AVX-512 subsets OpenBLAS's SkylakeX kernels
// use (F, CD, BW, DQ, VL).
func cpu512() bool {
	x := cpu.X86
	return x.HasAVX512F && x.HasAVX512CD && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL
}
