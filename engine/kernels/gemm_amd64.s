//go:build amd64 && !purego

#include "textflag.h"

// Micro-kernels for AVX2 + FMA. Register use for the float32 6×16 tile (the
// float64 6×8 tile is the same with four lanes per register):
//   Y0, Y1   one row of the B panel (16 columns)
//   Y2, Y3   broadcasts of two elements of the packed A column
//   Y4..Y15  the tile: row r in Y(4+2r) (columns 0..7) and Y(5+2r) (8..15)
// Each accumulator lane sums its products in order p = 0..k-1 with FMA, so
// an element's value depends only on its own row of A and column of B.

#define SROW(off, lo, hi) \
	VFMADD231PS Y0, off, lo; \
	VFMADD231PS Y1, off, hi

// func sgemmKernel6x16(k int, a *float32, b *float32, ldb int, c *float32, ldc int, alpha float32, beta float32)
TEXT ·sgemmKernel6x16(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ ldb+24(FP), R8
	SHLQ $2, R8
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
	VXORPS Y13, Y13, Y13
	VXORPS Y14, Y14, Y14
	VXORPS Y15, Y15, Y15

sloop:
	VMOVUPS      (DI), Y0
	VMOVUPS      32(DI), Y1
	VBROADCASTSS 0(SI), Y2
	VBROADCASTSS 4(SI), Y3
	SROW(Y2, Y4, Y5)
	SROW(Y3, Y6, Y7)
	VBROADCASTSS 8(SI), Y2
	VBROADCASTSS 12(SI), Y3
	SROW(Y2, Y8, Y9)
	SROW(Y3, Y10, Y11)
	VBROADCASTSS 16(SI), Y2
	VBROADCASTSS 20(SI), Y3
	SROW(Y2, Y12, Y13)
	SROW(Y3, Y14, Y15)
	ADDQ $24, SI
	ADDQ R8, DI
	DECQ CX
	JNZ  sloop

	MOVQ         ldc+40(FP), R9
	SHLQ         $2, R9
	VBROADCASTSS alpha+48(FP), Y0
	VMULPS       Y0, Y4, Y4
	VMULPS       Y0, Y5, Y5
	VMULPS       Y0, Y6, Y6
	VMULPS       Y0, Y7, Y7
	VMULPS       Y0, Y8, Y8
	VMULPS       Y0, Y9, Y9
	VMULPS       Y0, Y10, Y10
	VMULPS       Y0, Y11, Y11
	VMULPS       Y0, Y12, Y12
	VMULPS       Y0, Y13, Y13
	VMULPS       Y0, Y14, Y14
	VMULPS       Y0, Y15, Y15

	// beta == 0 (either sign): C is not read.
	MOVL  beta+52(FP), AX
	ANDL  $0x7fffffff, AX
	JZ    sstore
	MOVQ  c+32(FP), DX
	VBROADCASTSS beta+52(FP), Y1
	VFMADD231PS (DX), Y1, Y4
	VFMADD231PS 32(DX), Y1, Y5
	ADDQ  R9, DX
	VFMADD231PS (DX), Y1, Y6
	VFMADD231PS 32(DX), Y1, Y7
	ADDQ  R9, DX
	VFMADD231PS (DX), Y1, Y8
	VFMADD231PS 32(DX), Y1, Y9
	ADDQ  R9, DX
	VFMADD231PS (DX), Y1, Y10
	VFMADD231PS 32(DX), Y1, Y11
	ADDQ  R9, DX
	VFMADD231PS (DX), Y1, Y12
	VFMADD231PS 32(DX), Y1, Y13
	ADDQ  R9, DX
	VFMADD231PS (DX), Y1, Y14
	VFMADD231PS 32(DX), Y1, Y15

sstore:
	MOVQ    c+32(FP), DX
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ    R9, DX
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	ADDQ    R9, DX
	VMOVUPS Y8, (DX)
	VMOVUPS Y9, 32(DX)
	ADDQ    R9, DX
	VMOVUPS Y10, (DX)
	VMOVUPS Y11, 32(DX)
	ADDQ    R9, DX
	VMOVUPS Y12, (DX)
	VMOVUPS Y13, 32(DX)
	ADDQ    R9, DX
	VMOVUPS Y14, (DX)
	VMOVUPS Y15, 32(DX)
	VZEROUPPER
	RET

#define DROW(off, lo, hi) \
	VFMADD231PD Y0, off, lo; \
	VFMADD231PD Y1, off, hi

// func dgemmKernel6x8(k int, a *float64, b *float64, ldb int, c *float64, ldc int, alpha float64, beta float64)
TEXT ·dgemmKernel6x8(SB), NOSPLIT, $0-64
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ ldb+24(FP), R8
	SHLQ $3, R8
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	VXORPD Y12, Y12, Y12
	VXORPD Y13, Y13, Y13
	VXORPD Y14, Y14, Y14
	VXORPD Y15, Y15, Y15

dloop:
	VMOVUPD      (DI), Y0
	VMOVUPD      32(DI), Y1
	VBROADCASTSD 0(SI), Y2
	VBROADCASTSD 8(SI), Y3
	DROW(Y2, Y4, Y5)
	DROW(Y3, Y6, Y7)
	VBROADCASTSD 16(SI), Y2
	VBROADCASTSD 24(SI), Y3
	DROW(Y2, Y8, Y9)
	DROW(Y3, Y10, Y11)
	VBROADCASTSD 32(SI), Y2
	VBROADCASTSD 40(SI), Y3
	DROW(Y2, Y12, Y13)
	DROW(Y3, Y14, Y15)
	ADDQ $48, SI
	ADDQ R8, DI
	DECQ CX
	JNZ  dloop

	MOVQ         ldc+40(FP), R9
	SHLQ         $3, R9
	VBROADCASTSD alpha+48(FP), Y0
	VMULPD       Y0, Y4, Y4
	VMULPD       Y0, Y5, Y5
	VMULPD       Y0, Y6, Y6
	VMULPD       Y0, Y7, Y7
	VMULPD       Y0, Y8, Y8
	VMULPD       Y0, Y9, Y9
	VMULPD       Y0, Y10, Y10
	VMULPD       Y0, Y11, Y11
	VMULPD       Y0, Y12, Y12
	VMULPD       Y0, Y13, Y13
	VMULPD       Y0, Y14, Y14
	VMULPD       Y0, Y15, Y15

	MOVQ  beta+56(FP), AX
	SHLQ  $1, AX
	JZ    dstore
	MOVQ  c+32(FP), DX
	VBROADCASTSD beta+56(FP), Y1
	VFMADD231PD (DX), Y1, Y4
	VFMADD231PD 32(DX), Y1, Y5
	ADDQ  R9, DX
	VFMADD231PD (DX), Y1, Y6
	VFMADD231PD 32(DX), Y1, Y7
	ADDQ  R9, DX
	VFMADD231PD (DX), Y1, Y8
	VFMADD231PD 32(DX), Y1, Y9
	ADDQ  R9, DX
	VFMADD231PD (DX), Y1, Y10
	VFMADD231PD 32(DX), Y1, Y11
	ADDQ  R9, DX
	VFMADD231PD (DX), Y1, Y12
	VFMADD231PD 32(DX), Y1, Y13
	ADDQ  R9, DX
	VFMADD231PD (DX), Y1, Y14
	VFMADD231PD 32(DX), Y1, Y15

dstore:
	MOVQ    c+32(FP), DX
	VMOVUPD Y4, (DX)
	VMOVUPD Y5, 32(DX)
	ADDQ    R9, DX
	VMOVUPD Y6, (DX)
	VMOVUPD Y7, 32(DX)
	ADDQ    R9, DX
	VMOVUPD Y8, (DX)
	VMOVUPD Y9, 32(DX)
	ADDQ    R9, DX
	VMOVUPD Y10, (DX)
	VMOVUPD Y11, 32(DX)
	ADDQ    R9, DX
	VMOVUPD Y12, (DX)
	VMOVUPD Y13, 32(DX)
	ADDQ    R9, DX
	VMOVUPD Y14, (DX)
	VMOVUPD Y15, 32(DX)
	VZEROUPPER
	RET
