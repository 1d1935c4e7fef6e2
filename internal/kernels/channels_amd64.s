#include "textflag.h"

// The per-channel kernels of channels.go, 16 channels a call: float64 lanes hold 4 channels
// (Y registers), float32 lanes 8. Each lane does what the scalar loop does for its channel, in
// the same order, with no fused multiply-add, so the two give the same bits.

// func chanSum16(x *float32, ld, rows int, acc *float64)
TEXT ·chanSum16(SB), NOSPLIT, $0-32
	MOVQ    x+0(FP), SI
	MOVQ    ld+8(FP), R8
	SHLQ    $2, R8
	MOVQ    rows+16(FP), CX
	MOVQ    acc+24(FP), DI
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3

sumrow:
	VCVTPS2PD (SI), Y4
	VCVTPS2PD 16(SI), Y5
	VCVTPS2PD 32(SI), Y6
	VCVTPS2PD 48(SI), Y7
	VADDPD    Y4, Y0, Y0
	VADDPD    Y5, Y1, Y1
	VADDPD    Y6, Y2, Y2
	VADDPD    Y7, Y3, Y3
	ADDQ      R8, SI
	DECQ      CX
	JNZ       sumrow
	VMOVUPD   Y0, (DI)
	VMOVUPD   Y1, 32(DI)
	VMOVUPD   Y2, 64(DI)
	VMOVUPD   Y3, 96(DI)
	VZEROUPPER
	RET

// func chanSqDev16(x *float32, ld, rows int, mean, acc *float64)
TEXT ·chanSqDev16(SB), NOSPLIT, $0-40
	MOVQ    x+0(FP), SI
	MOVQ    ld+8(FP), R8
	SHLQ    $2, R8
	MOVQ    rows+16(FP), CX
	MOVQ    mean+24(FP), AX
	MOVQ    acc+32(FP), DI
	VMOVUPD (AX), Y8
	VMOVUPD 32(AX), Y9
	VMOVUPD 64(AX), Y10
	VMOVUPD 96(AX), Y11
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3

sqrow:
	VCVTPS2PD (SI), Y4
	VCVTPS2PD 16(SI), Y5
	VCVTPS2PD 32(SI), Y6
	VCVTPS2PD 48(SI), Y7
	VSUBPD    Y8, Y4, Y4
	VSUBPD    Y9, Y5, Y5
	VSUBPD    Y10, Y6, Y6
	VSUBPD    Y11, Y7, Y7
	VMULPD    Y4, Y4, Y4
	VMULPD    Y5, Y5, Y5
	VMULPD    Y6, Y6, Y6
	VMULPD    Y7, Y7, Y7
	VADDPD    Y4, Y0, Y0
	VADDPD    Y5, Y1, Y1
	VADDPD    Y6, Y2, Y2
	VADDPD    Y7, Y3, Y3
	ADDQ      R8, SI
	DECQ      CX
	JNZ       sqrow
	VMOVUPD   Y0, (DI)
	VMOVUPD   Y1, 32(DI)
	VMOVUPD   Y2, 64(DI)
	VMOVUPD   Y3, 96(DI)
	VZEROUPPER
	RET

// func chanNorm16(x, xh, y *float32, ld, rows int, mean, inv *float64, gamma, beta *float32)
TEXT ·chanNorm16(SB), NOSPLIT, $0-72
	MOVQ    x+0(FP), SI
	MOVQ    xh+8(FP), DI
	MOVQ    y+16(FP), DX
	MOVQ    ld+24(FP), R8
	SHLQ    $2, R8
	MOVQ    rows+32(FP), CX
	MOVQ    mean+40(FP), AX
	VMOVUPD (AX), Y4
	VMOVUPD 32(AX), Y5
	VMOVUPD 64(AX), Y6
	VMOVUPD 96(AX), Y7
	MOVQ    inv+48(FP), AX
	VMOVUPD (AX), Y8
	VMOVUPD 32(AX), Y9
	VMOVUPD 64(AX), Y10
	VMOVUPD 96(AX), Y11
	MOVQ    gamma+56(FP), AX
	VMOVUPS (AX), Y12
	VMOVUPS 32(AX), Y13
	MOVQ    beta+64(FP), AX
	VMOVUPS (AX), Y14
	VMOVUPS 32(AX), Y15

normrow:
	// channels 0–7
	VCVTPS2PD   (SI), Y0
	VCVTPS2PD   16(SI), Y1
	VSUBPD      Y4, Y0, Y0
	VSUBPD      Y5, Y1, Y1
	VMULPD      Y8, Y0, Y0
	VMULPD      Y9, Y1, Y1
	VCVTPD2PSY  Y0, X0
	VCVTPD2PSY  Y1, X1
	VINSERTF128 $1, X1, Y0, Y0
	VMOVUPS     Y0, (DI)
	VMULPS      Y12, Y0, Y0
	VADDPS      Y14, Y0, Y0
	VMOVUPS     Y0, (DX)

	// channels 8–15
	VCVTPS2PD   32(SI), Y2
	VCVTPS2PD   48(SI), Y3
	VSUBPD      Y6, Y2, Y2
	VSUBPD      Y7, Y3, Y3
	VMULPD      Y10, Y2, Y2
	VMULPD      Y11, Y3, Y3
	VCVTPD2PSY  Y2, X2
	VCVTPD2PSY  Y3, X3
	VINSERTF128 $1, X3, Y2, Y2
	VMOVUPS     Y2, 32(DI)
	VMULPS      Y13, Y2, Y2
	VADDPS      Y15, Y2, Y2
	VMOVUPS     Y2, 32(DX)

	ADDQ R8, SI
	ADDQ R8, DI
	ADDQ R8, DX
	DECQ CX
	JNZ  normrow
	VZEROUPPER
	RET

// func chanDots16(xh, dy *float32, ld, rows int, sg, sb *float64)
TEXT ·chanDots16(SB), NOSPLIT, $0-48
	MOVQ    xh+0(FP), SI
	MOVQ    dy+8(FP), BX
	MOVQ    ld+16(FP), R8
	SHLQ    $2, R8
	MOVQ    rows+24(FP), CX
	MOVQ    sg+32(FP), DI
	MOVQ    sb+40(FP), DX
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3
	VMOVUPD (DX), Y4
	VMOVUPD 32(DX), Y5
	VMOVUPD 64(DX), Y6
	VMOVUPD 96(DX), Y7

dotrow:
	VMOVUPS      (SI), Y8
	VMULPS       (BX), Y8, Y8
	VMOVUPS      32(SI), Y9
	VMULPS       32(BX), Y9, Y9
	VCVTPS2PD    X8, Y10
	VEXTRACTF128 $1, Y8, X8
	VCVTPS2PD    X8, Y11
	VCVTPS2PD    X9, Y12
	VEXTRACTF128 $1, Y9, X9
	VCVTPS2PD    X9, Y13
	VADDPD       Y10, Y0, Y0
	VADDPD       Y11, Y1, Y1
	VADDPD       Y12, Y2, Y2
	VADDPD       Y13, Y3, Y3
	VCVTPS2PD    (BX), Y10
	VCVTPS2PD    16(BX), Y11
	VCVTPS2PD    32(BX), Y12
	VCVTPS2PD    48(BX), Y13
	VADDPD       Y10, Y4, Y4
	VADDPD       Y11, Y5, Y5
	VADDPD       Y12, Y6, Y6
	VADDPD       Y13, Y7, Y7
	ADDQ         R8, SI
	ADDQ         R8, BX
	DECQ         CX
	JNZ          dotrow
	VMOVUPD      Y0, (DI)
	VMOVUPD      Y1, 32(DI)
	VMOVUPD      Y2, 64(DI)
	VMOVUPD      Y3, 96(DI)
	VMOVUPD      Y4, (DX)
	VMOVUPD      Y5, 32(DX)
	VMOVUPD      Y6, 64(DX)
	VMOVUPD      Y7, 96(DX)
	VZEROUPPER
	RET

// func chanDx16(xh, dy, dx *float32, ld, rows int, a, b, d *float32, add int)
TEXT ·chanDx16(SB), NOSPLIT, $0-72
	MOVQ    xh+0(FP), SI
	MOVQ    dy+8(FP), BX
	MOVQ    dx+16(FP), DI
	MOVQ    ld+24(FP), R8
	SHLQ    $2, R8
	MOVQ    rows+32(FP), CX
	MOVQ    a+40(FP), AX
	VMOVUPS (AX), Y10
	VMOVUPS 32(AX), Y11
	MOVQ    b+48(FP), AX
	VMOVUPS (AX), Y12
	VMOVUPS 32(AX), Y13
	MOVQ    d+56(FP), AX
	VMOVUPS (AX), Y14
	VMOVUPS 32(AX), Y15
	MOVQ    add+64(FP), DX
	TESTQ   DX, DX
	JNZ     addrow

setrow:
	VMULPS  (BX), Y10, Y0
	VSUBPS  Y12, Y0, Y0
	VMULPS  (SI), Y14, Y1
	VSUBPS  Y1, Y0, Y0
	VMOVUPS Y0, (DI)
	VMULPS  32(BX), Y11, Y2
	VSUBPS  Y13, Y2, Y2
	VMULPS  32(SI), Y15, Y3
	VSUBPS  Y3, Y2, Y2
	VMOVUPS Y2, 32(DI)
	ADDQ    R8, SI
	ADDQ    R8, BX
	ADDQ    R8, DI
	DECQ    CX
	JNZ     setrow
	VZEROUPPER
	RET

addrow:
	VMULPS  (BX), Y10, Y0
	VSUBPS  Y12, Y0, Y0
	VMULPS  (SI), Y14, Y1
	VSUBPS  Y1, Y0, Y0
	VADDPS  (DI), Y0, Y0
	VMOVUPS Y0, (DI)
	VMULPS  32(BX), Y11, Y2
	VSUBPS  Y13, Y2, Y2
	VMULPS  32(SI), Y15, Y3
	VSUBPS  Y3, Y2, Y2
	VADDPS  32(DI), Y2, Y2
	VMOVUPS Y2, 32(DI)
	ADDQ    R8, SI
	ADDQ    R8, BX
	ADDQ    R8, DI
	DECQ    CX
	JNZ     addrow
	VZEROUPPER
	RET
