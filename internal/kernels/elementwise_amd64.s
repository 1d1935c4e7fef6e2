#include "textflag.h"

// The element-wise kernels of elementwise.go, 8 float32 elements a step (AVX2). Each lane does
// what the scalar loop does for its element, so the two give the same bits.

// func reluVec(x, y *float32, n int)
//
// y = x AND (x > 0 or unordered) AND 0x7fffffff: x where x > 0, x with its sign bit cleared
// where x is NaN, +0 elsewhere, which is what Go's max(x, 0) compiles to on amd64 (−min(−x, −0)
// with MINSS).
TEXT ·reluVec(SB), NOSPLIT, $0-24
	MOVQ     x+0(FP), SI
	MOVQ     y+8(FP), DI
	MOVQ     n+16(FP), CX
	SHRQ     $3, CX
	VXORPS   Y15, Y15, Y15
	VPCMPEQD Y14, Y14, Y14
	VPSRLD   $1, Y14, Y14

relu:
	VMOVUPS (SI), Y0
	VCMPPS  $6, Y15, Y0, Y1 // NLE_US: not (x ≤ 0), true for NaN
	VANDPS  Y0, Y1, Y0
	VANDPS  Y14, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     relu
	VZEROUPPER
	RET

// func reluGradVec(x, dy, dx *float32, n int)
//
// dx = dy AND NOT (x's sign bit spread over the lane).
TEXT ·reluGradVec(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ dy+8(FP), BX
	MOVQ dx+16(FP), DI
	MOVQ n+24(FP), CX
	SHRQ $3, CX

relugrad:
	VMOVDQU (SI), Y0
	VPSRAD  $31, Y0, Y0
	VPANDN  (BX), Y0, Y0
	VMOVDQU Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, BX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     relugrad
	VZEROUPPER
	RET

// func addVec(y, a *float32, n int)
TEXT ·addVec(SB), NOSPLIT, $0-24
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX

add:
	VMOVUPS (DI), Y0
	VADDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     add
	VZEROUPPER
	RET

// func add2Vec(y, a, b *float32, n int)
TEXT ·add2Vec(SB), NOSPLIT, $0-32
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), BX
	MOVQ n+24(FP), CX
	SHRQ $3, CX

add2:
	VMOVUPS (SI), Y0
	VADDPS  (BX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, BX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     add2
	VZEROUPPER
	RET

// func addScaled64Vec(s *float64, c float32, v *float32, n int)
TEXT ·addScaled64Vec(SB), NOSPLIT, $0-32
	MOVQ         s+0(FP), DI
	VBROADCASTSS c+8(FP), Y15
	MOVQ         v+16(FP), SI
	MOVQ         n+24(FP), CX
	SHRQ         $3, CX

scaled:
	VMULPS       (SI), Y15, Y0
	VCVTPS2PD    X0, Y1
	VEXTRACTF128 $1, Y0, X0
	VCVTPS2PD    X0, Y2
	VADDPD       (DI), Y1, Y1
	VADDPD       32(DI), Y2, Y2
	VMOVUPD      Y1, (DI)
	VMOVUPD      Y2, 32(DI)
	ADDQ         $32, SI
	ADDQ         $64, DI
	DECQ         CX
	JNZ          scaled
	VZEROUPPER
	RET
