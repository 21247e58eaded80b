//go:build amd64 && !purego

#include "textflag.h"

// Micro-kernels for AVX2 + FMA. Register use for the float32 6×16 tile (the
// float64 6×8 tile is the same with four lanes per register):
//   Y0, Y1   one row of the B panel (16 columns)
//   Y2, Y3   broadcasts of two elements of the A column; element (r, p) of
//            the 6×k block of A is at a + r·rsa + p·csa (packed: rsa = 1,
//            csa = 6; in place: rsa = lda, csa = 1, or transposed the reverse)
//   Y4..Y15  the tile: row r in Y(4+2r) (columns 0..7) and Y(5+2r) (8..15)
// Each accumulator lane sums its products in order p = 0..k-1 with FMA, so
// an element's value depends only on its own row of A and column of B.

#define SROW(off, lo, hi) \
	VFMADD231PS Y0, off, lo; \
	VFMADD231PS Y1, off, hi

// func sgemmKernel6x16(k int, a *float32, rsa int, csa int, b *float32, ldb int, c *float32, ldc int, alpha float32, beta float32)
TEXT ·sgemmKernel6x16(SB), NOSPLIT, $0-72
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rsa+16(FP), R8
	SHLQ $2, R8
	MOVQ csa+24(FP), R11
	SHLQ $2, R11
	LEAQ (SI)(R8*2), R10
	ADDQ R8, R10
	MOVQ b+32(FP), DI
	MOVQ ldb+40(FP), AX
	SHLQ $2, AX
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
	PREFETCHT0   (DI)(AX*8)
	VMOVUPS      (DI), Y0
	VMOVUPS      32(DI), Y1
	VBROADCASTSS (SI), Y2
	VBROADCASTSS (SI)(R8*1), Y3
	SROW(Y2, Y4, Y5)
	SROW(Y3, Y6, Y7)
	VBROADCASTSS (SI)(R8*2), Y2
	VBROADCASTSS (R10), Y3
	SROW(Y2, Y8, Y9)
	SROW(Y3, Y10, Y11)
	VBROADCASTSS (R10)(R8*1), Y2
	VBROADCASTSS (R10)(R8*2), Y3
	SROW(Y2, Y12, Y13)
	SROW(Y3, Y14, Y15)
	ADDQ R11, SI
	ADDQ R11, R10
	ADDQ AX, DI
	DECQ CX
	JNZ  sloop

	MOVQ         ldc+56(FP), R9
	SHLQ         $2, R9
	VBROADCASTSS alpha+64(FP), Y0
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
	MOVL  beta+68(FP), AX
	ANDL  $0x7fffffff, AX
	JZ    sstore
	MOVQ  c+48(FP), DX
	VBROADCASTSS beta+68(FP), Y1
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
	MOVQ    c+48(FP), DX
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

// func dgemmKernel6x8(k int, a *float64, rsa int, csa int, b *float64, ldb int, c *float64, ldc int, alpha float64, beta float64)
TEXT ·dgemmKernel6x8(SB), NOSPLIT, $0-80
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ rsa+16(FP), R8
	SHLQ $3, R8
	MOVQ csa+24(FP), R11
	SHLQ $3, R11
	LEAQ (SI)(R8*2), R10
	ADDQ R8, R10
	MOVQ b+32(FP), DI
	MOVQ ldb+40(FP), AX
	SHLQ $3, AX
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
	PREFETCHT0   (DI)(AX*8)
	PREFETCHT0   32(DI)(AX*8)
	VMOVUPD      (DI), Y0
	VMOVUPD      32(DI), Y1
	VBROADCASTSD (SI), Y2
	VBROADCASTSD (SI)(R8*1), Y3
	DROW(Y2, Y4, Y5)
	DROW(Y3, Y6, Y7)
	VBROADCASTSD (SI)(R8*2), Y2
	VBROADCASTSD (R10), Y3
	DROW(Y2, Y8, Y9)
	DROW(Y3, Y10, Y11)
	VBROADCASTSD (R10)(R8*1), Y2
	VBROADCASTSD (R10)(R8*2), Y3
	DROW(Y2, Y12, Y13)
	DROW(Y3, Y14, Y15)
	ADDQ R11, SI
	ADDQ R11, R10
	ADDQ AX, DI
	DECQ CX
	JNZ  dloop

	MOVQ         ldc+56(FP), R9
	SHLQ         $3, R9
	VBROADCASTSD alpha+64(FP), Y0
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

	MOVQ  beta+72(FP), AX
	SHLQ  $1, AX
	JZ    dstore
	MOVQ  c+48(FP), DX
	VBROADCASTSD beta+72(FP), Y1
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
	MOVQ    c+48(FP), DX
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
