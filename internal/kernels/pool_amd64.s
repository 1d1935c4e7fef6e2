#include "textflag.h"

// The max-pooling passes of pool.go, 8 lanes a step (AVX2). Go's max(a, b) on amd64 is
// −(min(−a, −b) OR min(min(−a, −b), −a)) with MINSS, which picks its second operand when either
// is NaN or both are equal; the lanes run the same MINPS sequence, so NaNs and signed zeros come
// out as in the scalar loop.

// func maxPairsVec(a, b, m *float32, k, i *int32, n int, base, c int32)
TEXT ·maxPairsVec(SB), NOSPLIT, $0-56
	MOVQ         a+0(FP), SI
	MOVQ         b+8(FP), BX
	MOVQ         m+16(FP), DI
	MOVQ         k+24(FP), DX
	MOVQ         i+32(FP), R8
	MOVQ         n+40(FP), CX
	SHRQ         $3, CX
	MOVL         base+48(FP), AX
	MOVL         AX, X13
	VPBROADCASTD X13, Y13         // the index of lane 0
	MOVL         c+52(FP), AX
	MOVL         AX, X12
	VPBROADCASTD X12, Y12
	MOVL         $0x80000000, AX
	MOVL         AX, X11
	VPBROADCASTD X11, Y11         // the sign bit
	VXORPS       Y10, Y10, Y10    // +0
	MOVL         $8, AX
	MOVL         AX, X9
	VPBROADCASTD X9, Y9           // 8, the index step
	VMOVDQU      lanes<>(SB), Y8  // 0, 1, …, 7
	VPADDD       Y8, Y13, Y13

pairs:
	VMOVUPS (SI), Y0 // a
	VMOVUPS (BX), Y1 // b

	// the keys of a + 0 and b + 0
	VADDPS  Y10, Y0, Y2
	VADDPS  Y10, Y1, Y3
	VPSRAD  $31, Y2, Y4
	VPSRLD  $1, Y4, Y4
	VPXOR   Y4, Y2, Y2  // ka
	VPSRAD  $31, Y3, Y4
	VPSRLD  $1, Y4, Y4
	VPXOR   Y4, Y3, Y3  // kb
	VPCMPGTD Y2, Y3, Y4 // kb > ka
	VPAND   Y12, Y4, Y4 // c where kb > ka
	VPADDD  Y13, Y4, Y4
	VMOVDQU Y4, (R8)
	VPMAXSD Y3, Y2, Y4
	VMOVDQU Y4, (DX)

	// Go's max(a, b)
	VXORPS Y11, Y0, Y0 // −a
	VXORPS Y11, Y1, Y1 // −b
	VMINPS Y1, Y0, Y5  // t1 = −a < −b ? −a : −b
	VMINPS Y0, Y5, Y6  // t2 = t1 < −a ? t1 : −a
	VORPS  Y5, Y6, Y6
	VXORPS Y11, Y6, Y6
	VMOVUPS Y6, (DI)

	VPADDD Y9, Y13, Y13
	ADDQ   $32, SI
	ADDQ   $32, BX
	ADDQ   $32, DI
	ADDQ   $32, DX
	ADDQ   $32, R8
	DECQ   CX
	JNZ    pairs
	VZEROUPPER
	RET

// func maxRowsVec(y *float32, arg *int32, pm, cm *float32, pk, ck, pi, ci *int32, n int)
TEXT ·maxRowsVec(SB), NOSPLIT, $0-72
	MOVQ         y+0(FP), DI
	MOVQ         arg+8(FP), R8
	MOVQ         pm+16(FP), SI
	MOVQ         cm+24(FP), BX
	MOVQ         pk+32(FP), R9
	MOVQ         ck+40(FP), R10
	MOVQ         pi+48(FP), R11
	MOVQ         ci+56(FP), R12
	MOVQ         n+64(FP), CX
	SHRQ         $3, CX
	MOVL         $0x80000000, AX
	MOVL         AX, X11
	VPBROADCASTD X11, Y11

rows:
	VMOVDQU  (R9), Y2
	VMOVDQU  (R10), Y3
	VPCMPGTD Y2, Y3, Y4 // ck > pk
	VMOVDQU  (R11), Y5
	VMOVDQU  (R12), Y6
	VPBLENDVB Y4, Y6, Y5, Y5 // ci where ck > pk, else pi
	VMOVDQU  Y5, (R8)

	VMOVUPS (SI), Y0
	VMOVUPS (BX), Y1
	VXORPS  Y11, Y0, Y0
	VXORPS  Y11, Y1, Y1
	VMINPS  Y1, Y0, Y5
	VMINPS  Y0, Y5, Y6
	VORPS   Y5, Y6, Y6
	VXORPS  Y11, Y6, Y6
	VMOVUPS Y6, (DI)

	ADDQ $32, DI
	ADDQ $32, R8
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	ADDQ $32, R12
	DECQ CX
	JNZ  rows
	VZEROUPPER
	RET

DATA lanes<>+0(SB)/4, $0
DATA lanes<>+4(SB)/4, $1
DATA lanes<>+8(SB)/4, $2
DATA lanes<>+12(SB)/4, $3
DATA lanes<>+16(SB)/4, $4
DATA lanes<>+20(SB)/4, $5
DATA lanes<>+24(SB)/4, $6
DATA lanes<>+28(SB)/4, $7
GLOBL lanes<>(SB), RODATA|NOPTR, $32
