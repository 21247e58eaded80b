//go:build amd64 && !purego

#include "textflag.h"
#include "dotfold_amd64.h"

// func sdotKernel4x4AVX512(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, alpha float32, beta float32)
//
// A 4×4 tile of dot products for A·Bᵀ (AVX-512F). Row r of A is at
// SI, R10, R11, DX; row j of B at DI, R12, R13, BX; AX is the byte offset
// along k. The accumulator for (r, j) is Z(16+4r+j): its lane l sums the
// products at positions ≡ l (mod 16), in order; the last partial group of 16
// is loaded under the mask K1 with the other lanes zeroed. Each accumulator
// is then folded to 8 lanes (low half + high half) and reduced as in the
// AVX2 kernel: pairwise within 128-bit halves, then the two halves.
TEXT ·sdotKernel4x4AVX512(SB), NOSPLIT, $0-64
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $2, R8
	LEAQ (SI)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (R11)(R8*1), DX
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R9
	SHLQ $2, R9
	LEAQ (DI)(R9*1), R12
	LEAQ (R12)(R9*1), R13
	LEAQ (R13)(R9*1), BX
	XORQ AX, AX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	VPXORD Z24, Z24, Z24
	VPXORD Z25, Z25, Z25
	VPXORD Z26, Z26, Z26
	VPXORD Z27, Z27, Z27
	VPXORD Z28, Z28, Z28
	VPXORD Z29, Z29, Z29
	VPXORD Z30, Z30, Z30
	VPXORD Z31, Z31, Z31

sdot16:
	CMPQ CX, $16
	JL sdot16tail
	VMOVUPS (SI)(AX*1), Z0
	VMOVUPS (R10)(AX*1), Z1
	VMOVUPS (R11)(AX*1), Z2
	VMOVUPS (DX)(AX*1), Z3
	VMOVUPS (DI)(AX*1), Z4
	VFMADD231PS Z4, Z0, Z16
	VFMADD231PS Z4, Z1, Z20
	VFMADD231PS Z4, Z2, Z24
	VFMADD231PS Z4, Z3, Z28
	VMOVUPS (R12)(AX*1), Z4
	VFMADD231PS Z4, Z0, Z17
	VFMADD231PS Z4, Z1, Z21
	VFMADD231PS Z4, Z2, Z25
	VFMADD231PS Z4, Z3, Z29
	VMOVUPS (R13)(AX*1), Z4
	VFMADD231PS Z4, Z0, Z18
	VFMADD231PS Z4, Z1, Z22
	VFMADD231PS Z4, Z2, Z26
	VFMADD231PS Z4, Z3, Z30
	VMOVUPS (BX)(AX*1), Z4
	VFMADD231PS Z4, Z0, Z19
	VFMADD231PS Z4, Z1, Z23
	VFMADD231PS Z4, Z2, Z27
	VFMADD231PS Z4, Z3, Z31
	ADDQ $64, AX
	SUBQ $16, CX
	JMP sdot16

sdot16tail:
	TESTQ CX, CX
	JZ sdot16reduce
	MOVL $1, R8
	SHLL CX, R8
	DECL R8
	KMOVW R8, K1
	VMOVUPS.Z (SI)(AX*1), K1, Z0
	VMOVUPS.Z (R10)(AX*1), K1, Z1
	VMOVUPS.Z (R11)(AX*1), K1, Z2
	VMOVUPS.Z (DX)(AX*1), K1, Z3
	VMOVUPS.Z (DI)(AX*1), K1, Z4
	VFMADD231PS Z4, Z0, Z16
	VFMADD231PS Z4, Z1, Z20
	VFMADD231PS Z4, Z2, Z24
	VFMADD231PS Z4, Z3, Z28
	VMOVUPS.Z (R12)(AX*1), K1, Z4
	VFMADD231PS Z4, Z0, Z17
	VFMADD231PS Z4, Z1, Z21
	VFMADD231PS Z4, Z2, Z25
	VFMADD231PS Z4, Z3, Z29
	VMOVUPS.Z (R13)(AX*1), K1, Z4
	VFMADD231PS Z4, Z0, Z18
	VFMADD231PS Z4, Z1, Z22
	VFMADD231PS Z4, Z2, Z26
	VFMADD231PS Z4, Z3, Z30
	VMOVUPS.Z (BX)(AX*1), K1, Z4
	VFMADD231PS Z4, Z0, Z19
	VFMADD231PS Z4, Z1, Z23
	VFMADD231PS Z4, Z2, Z27
	VFMADD231PS Z4, Z3, Z31

sdot16reduce:
	MOVQ         c+40(FP), SI
	MOVQ         ldc+48(FP), R9
	SHLQ         $2, R9
	VBROADCASTSS alpha+56(FP), X2
	VBROADCASTSS beta+60(FP), X3
	MOVL         beta+60(FP), CX
	ANDL         $0x7fffffff, CX
	FOLD4(Z16, Z17, Z18, Z19)
	TESTL CX, CX
	JZ sdot16store0
	VFMADD231PS (SI), X3, X0
sdot16store0:
	VMOVUPS X0, (SI)
	ADDQ R9, SI
	FOLD4(Z20, Z21, Z22, Z23)
	TESTL CX, CX
	JZ sdot16store1
	VFMADD231PS (SI), X3, X0
sdot16store1:
	VMOVUPS X0, (SI)
	ADDQ R9, SI
	FOLD4(Z24, Z25, Z26, Z27)
	TESTL CX, CX
	JZ sdot16store2
	VFMADD231PS (SI), X3, X0
sdot16store2:
	VMOVUPS X0, (SI)
	ADDQ R9, SI
	FOLD4(Z28, Z29, Z30, Z31)
	TESTL CX, CX
	JZ sdot16store3
	VFMADD231PS (SI), X3, X0
sdot16store3:
	VMOVUPS X0, (SI)
	VZEROUPPER
	RET

// func sdotStream2AVX512(k int, a *float32, b0 *float32, b1 *float32, rows int, ldb int, c0 *float32, c1 *float32, alpha float32, beta float32)
//
// One row of A against two runs of rows of B, rows consecutive rows from
// b0 and as many from b1, computed pairwise (row i of each at a time),
// so a thread reads B as two sequential streams: c0[i] = alpha·a·b0[i]ᵀ +
// beta·c0[i], c1[i] likewise. Each element is summed exactly as in
// sdotKernel4x4AVX512 (the same 16 lanes in order, the same masked tail,
// FOLD4's tree) and beta is added as there (a fused multiply-add, C not
// read when beta is ±0), so it equals the element of a 4×4 tile bit for
// bit. A product streaming its weights once runs at the machine's read
// bandwidth this way: the 1×8 kernel this replaced read eight rows of a
// few KiB, eight short streams, which the hardware prefetchers follow
// badly. Row i of
// either run's accumulator is Z16 (b0) and Z17 (b1); AX is the byte
// offset along k.
TEXT ·sdotStream2AVX512(SB), NOSPLIT, $0-72
	STREAM2ARGS($2)
	MOVQ CX, R13
	ANDL $15, CX
	MOVL $1, BX
	SHLL CX, BX
	DECL BX
	KMOVW BX, K1
	MOVQ R13, CX

s2row:
	TESTQ R8, R8
	JZ s2done
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	XORQ AX, AX
	MOVQ CX, BX

s2loop32:
	CMPQ BX, $32
	JL s2loop16
	VMOVUPS (SI)(AX*1), Z0
	VMOVUPS (DI)(AX*1), Z4
	VFMADD231PS Z4, Z0, Z16
	VMOVUPS (R12)(AX*1), Z5
	VFMADD231PS Z5, Z0, Z17
	VMOVUPS 64(SI)(AX*1), Z1
	VMOVUPS 64(DI)(AX*1), Z6
	VFMADD231PS Z6, Z1, Z16
	VMOVUPS 64(R12)(AX*1), Z7
	VFMADD231PS Z7, Z1, Z17
	ADDQ $128, AX
	SUBQ $32, BX
	JMP s2loop32

s2loop16:
	CMPQ BX, $16
	JL s2tail
	VMOVUPS (SI)(AX*1), Z0
	VMOVUPS (DI)(AX*1), Z4
	VFMADD231PS Z4, Z0, Z16
	VMOVUPS (R12)(AX*1), Z5
	VFMADD231PS Z5, Z0, Z17
	ADDQ $64, AX
	SUBQ $16, BX

s2tail:
	TESTQ BX, BX
	JZ s2reduce
	VMOVUPS.Z (SI)(AX*1), K1, Z0
	VMOVUPS.Z (DI)(AX*1), K1, Z4
	VFMADD231PS Z4, Z0, Z16
	VMOVUPS.Z (R12)(AX*1), K1, Z5
	VFMADD231PS Z5, Z0, Z17

s2reduce:
	FOLD4(Z16, Z17, Z16, Z17)
	STREAM2NEXT(s2store, s2row)

s2done:
	VZEROUPPER
	RET
