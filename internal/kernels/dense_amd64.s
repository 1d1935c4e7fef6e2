#include "textflag.h"

// func denseFMA(x *float32, ldx int, w *float32, ldw int, y *float32, ldy int, rows, d, blocks int)
//
// y[r][16b+j] = Σ_k x[r][k]·w[k][16b+j] for r < rows, b < blocks, j < 16: each element one chain
// of single-precision fused multiply-adds in k order from 0, whatever its row's group (rows go
// four at a time, then one at a time, through the same VFMADD231PS on every lane). d ≥ 1; the
// strides are in elements.
TEXT ·denseFMA(SB), NOSPLIT, $0-72
	MOVQ ldx+8(FP), R8
	SHLQ $2, R8
	MOVQ ldw+24(FP), R9
	SHLQ $2, R9
	MOVQ ldy+40(FP), R10
	SHLQ $2, R10
	LEAQ (R8)(R8*2), R14
	LEAQ (R10)(R10*2), R15
	XORQ R12, R12
	MOVQ blocks+64(FP), R13

cols:
	TESTQ R13, R13
	JZ    done
	MOVQ  x+0(FP), SI
	MOVQ  w+16(FP), DI
	ADDQ  R12, DI
	MOVQ  y+32(FP), DX
	ADDQ  R12, DX
	MOVQ  rows+48(FP), R11

rows4:
	CMPQ   R11, $4
	JLT    rows1
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	MOVQ   SI, AX
	MOVQ   DI, BX
	MOVQ   d+56(FP), CX

k4:
	VMOVUPS      (BX), Y8
	VMOVUPS      32(BX), Y9
	VBROADCASTSS (AX), Y10
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VBROADCASTSS (AX)(R8*1), Y11
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VBROADCASTSS (AX)(R8*2), Y12
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VBROADCASTSS (AX)(R14*1), Y13
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ         $4, AX
	ADDQ         R9, BX
	DECQ         CX
	JNZ          k4
	VMOVUPS      Y0, (DX)
	VMOVUPS      Y1, 32(DX)
	VMOVUPS      Y2, (DX)(R10*1)
	VMOVUPS      Y3, 32(DX)(R10*1)
	VMOVUPS      Y4, (DX)(R10*2)
	VMOVUPS      Y5, 32(DX)(R10*2)
	VMOVUPS      Y6, (DX)(R15*1)
	VMOVUPS      Y7, 32(DX)(R15*1)
	LEAQ         (SI)(R8*4), SI
	LEAQ         (DX)(R10*4), DX
	SUBQ         $4, R11
	JMP          rows4

rows1:
	TESTQ  R11, R11
	JZ     nextcol
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	MOVQ   SI, AX
	MOVQ   DI, BX
	MOVQ   d+56(FP), CX

k1:
	VMOVUPS      (BX), Y8
	VMOVUPS      32(BX), Y9
	VBROADCASTSS (AX), Y10
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	ADDQ         $4, AX
	ADDQ         R9, BX
	DECQ         CX
	JNZ          k1
	VMOVUPS      Y0, (DX)
	VMOVUPS      Y1, 32(DX)
	ADDQ         R8, SI
	ADDQ         R10, DX
	DECQ         R11
	JMP          rows1

nextcol:
	ADDQ $64, R12
	DECQ R13
	JMP  cols

done:
	VZEROUPPER
	RET

// func denseFMA512(x *float32, ldx int, w *float32, ldw int, y *float32, ldy int, rows, d, blocks int)
//
// denseFMA with 32 columns a block in Z registers: the same chain of VFMADD231PS per element in
// k order, so the same bits as denseFMA for every element, twice the columns per instruction.
TEXT ·denseFMA512(SB), NOSPLIT, $0-72
	MOVQ ldx+8(FP), R8
	SHLQ $2, R8
	MOVQ ldw+24(FP), R9
	SHLQ $2, R9
	MOVQ ldy+40(FP), R10
	SHLQ $2, R10
	LEAQ (R8)(R8*2), R14
	LEAQ (R10)(R10*2), R15
	XORQ R12, R12
	MOVQ blocks+64(FP), R13

cols512:
	TESTQ R13, R13
	JZ    done512
	MOVQ  x+0(FP), SI
	MOVQ  w+16(FP), DI
	ADDQ  R12, DI
	MOVQ  y+32(FP), DX
	ADDQ  R12, DX
	MOVQ  rows+48(FP), R11

rows4z:
	CMPQ    R11, $4
	JLT     rows1z
	VXORPS  Z0, Z0, Z0
	VXORPS  Z1, Z1, Z1
	VXORPS  Z2, Z2, Z2
	VXORPS  Z3, Z3, Z3
	VXORPS  Z4, Z4, Z4
	VXORPS  Z5, Z5, Z5
	VXORPS  Z6, Z6, Z6
	VXORPS  Z7, Z7, Z7
	MOVQ    SI, AX
	MOVQ    DI, BX
	MOVQ    d+56(FP), CX

k4z:
	VMOVUPS      (BX), Z8
	VMOVUPS      64(BX), Z9
	VBROADCASTSS (AX), Z10
	VFMADD231PS  Z8, Z10, Z0
	VFMADD231PS  Z9, Z10, Z1
	VBROADCASTSS (AX)(R8*1), Z11
	VFMADD231PS  Z8, Z11, Z2
	VFMADD231PS  Z9, Z11, Z3
	VBROADCASTSS (AX)(R8*2), Z12
	VFMADD231PS  Z8, Z12, Z4
	VFMADD231PS  Z9, Z12, Z5
	VBROADCASTSS (AX)(R14*1), Z13
	VFMADD231PS  Z8, Z13, Z6
	VFMADD231PS  Z9, Z13, Z7
	ADDQ         $4, AX
	ADDQ         R9, BX
	DECQ         CX
	JNZ          k4z
	VMOVUPS      Z0, (DX)
	VMOVUPS      Z1, 64(DX)
	VMOVUPS      Z2, (DX)(R10*1)
	VMOVUPS      Z3, 64(DX)(R10*1)
	VMOVUPS      Z4, (DX)(R10*2)
	VMOVUPS      Z5, 64(DX)(R10*2)
	VMOVUPS      Z6, (DX)(R15*1)
	VMOVUPS      Z7, 64(DX)(R15*1)
	LEAQ         (SI)(R8*4), SI
	LEAQ         (DX)(R10*4), DX
	SUBQ         $4, R11
	JMP          rows4z

rows1z:
	TESTQ  R11, R11
	JZ     nextcolz
	VXORPS Z0, Z0, Z0
	VXORPS Z1, Z1, Z1
	MOVQ   SI, AX
	MOVQ   DI, BX
	MOVQ   d+56(FP), CX

k1z:
	VMOVUPS      (BX), Z8
	VMOVUPS      64(BX), Z9
	VBROADCASTSS (AX), Z10
	VFMADD231PS  Z8, Z10, Z0
	VFMADD231PS  Z9, Z10, Z1
	ADDQ         $4, AX
	ADDQ         R9, BX
	DECQ         CX
	JNZ          k1z
	VMOVUPS      Z0, (DX)
	VMOVUPS      Z1, 64(DX)
	ADDQ         R8, SI
	ADDQ         R10, DX
	DECQ         R11
	JMP          rows1z

nextcolz:
	ADDQ $128, R12
	DECQ R13
	JMP  cols512

done512:
	VZEROUPPER
	RET
