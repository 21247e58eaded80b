// widedot_amd64.h holds the dot kernels of the dot route with B stored in
// 16 bits (half precision in f16_amd64.s, bfloat16 in bf16wide_amd64.s),
// which include it with three macros defined:
//
//	WIDEN16(src, dst): the 16 16-bit elements at src (a 256-bit memory
//	                   operand or a Y register) widened, exactly, to the
//	                   16 float32 lanes of Z register dst
//	WDOT4X4,
//	WDOTSTREAM2:       the kernels' symbol names
//
// Each kernel is the float32 kernel of dot512_amd64.s with B widened as it
// is loaded: every accumulator takes the float32 kernel's products in its
// order, and the reduction is its instruction for instruction, so a tile
// is the float32 tile of B widened, bit for bit. They need AVX512BW and
// AVX512VL besides AVX-512F.

// WDOT4X4GROUP is one group of 16 elements of WDOT4X4: A's
// four rows at OA bytes past SI, R10, R11, DX (and AX), B's four rows
// widened from OB bytes past DI, R12, R13, BX, sixteen FMAs into
// Z16-Z31.
#define WDOT4X4GROUP(OA, OB) \
	VMOVUPS OA(SI)(AX*1), Z0;  \
	VMOVUPS OA(R10)(AX*1), Z1; \
	VMOVUPS OA(R11)(AX*1), Z2; \
	VMOVUPS OA(DX)(AX*1), Z3;  \
	WIDEN16(OB(DI), Z4);      \
	VFMADD231PS Z4, Z0, Z16;   \
	VFMADD231PS Z4, Z1, Z20;   \
	VFMADD231PS Z4, Z2, Z24;   \
	VFMADD231PS Z4, Z3, Z28;   \
	WIDEN16(OB(R12), Z4);     \
	VFMADD231PS Z4, Z0, Z17;   \
	VFMADD231PS Z4, Z1, Z21;   \
	VFMADD231PS Z4, Z2, Z25;   \
	VFMADD231PS Z4, Z3, Z29;   \
	WIDEN16(OB(R13), Z4);     \
	VFMADD231PS Z4, Z0, Z18;   \
	VFMADD231PS Z4, Z1, Z22;   \
	VFMADD231PS Z4, Z2, Z26;   \
	VFMADD231PS Z4, Z3, Z30;   \
	WIDEN16(OB(BX), Z4);      \
	VFMADD231PS Z4, Z0, Z19;   \
	VFMADD231PS Z4, Z1, Z23;   \
	VFMADD231PS Z4, Z2, Z27;   \
	VFMADD231PS Z4, Z3, Z31

// func WDOT4X4(k int, a *float32, lda int, b *uint16, ldb int, c *float32, ldc int, alpha float32, beta float32)
//
// sdotKernel4x4AVX512 with B in 16 bits: each group of 16 elements of a
// row of B is loaded by WIDEN16 from B's row pointers (DI, R12, R13, BX, moving 32 bytes per group); the last
// partial group is loaded under K1 as 16-bit words (VMOVDQU16, the other
// lanes zero, which widen to +0, as the float32 kernel's zeroed lanes are).
// Two groups a step, each row's next line of the next tile asked into L2
// (R8 = 4 rows): rows of a few KiB, two to a page, are streams the
// hardware prefetchers follow badly. Each accumulator takes the float32
// kernel's products in the float32 kernel's order, and the reduction is
// its instruction for instruction, so the tile is the float32 tile of B
// widened, bit for bit. Needs AVX512BW and AVX512VL besides AVX-512F.
TEXT WDOT4X4(SB), NOSPLIT, $0-64
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $2, R8
	LEAQ (SI)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (R11)(R8*1), DX
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R9
	SHLQ $1, R9
	LEAQ (DI)(R9*1), R12
	LEAQ (R12)(R9*1), R13
	LEAQ (R13)(R9*1), BX
	LEAQ (R9)(R9*1), R8
	SHLQ $1, R8 // 4 rows of B: the next tile's
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

hdot32:
	CMPQ CX, $32
	JL hdot16
	PREFETCHT1 (DI)(R8*1)
	PREFETCHT1 (R12)(R8*1)
	PREFETCHT1 (R13)(R8*1)
	PREFETCHT1 (BX)(R8*1)
	WDOT4X4GROUP(0, 0)
	WDOT4X4GROUP(64, 32)
	ADDQ $128, AX
	ADDQ $64, DI
	ADDQ $64, R12
	ADDQ $64, R13
	ADDQ $64, BX
	SUBQ $32, CX
	JMP hdot32

hdot16:
	CMPQ CX, $16
	JL hdot16tail
	WDOT4X4GROUP(0, 0)
	ADDQ $64, AX
	ADDQ $32, DI
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $32, BX
	SUBQ $16, CX
	JMP hdot16

hdot16tail:
	TESTQ CX, CX
	JZ hdot16reduce
	MOVL $1, R8
	SHLL CX, R8
	DECL R8
	KMOVW R8, K1
	VMOVUPS.Z (SI)(AX*1), K1, Z0
	VMOVUPS.Z (R10)(AX*1), K1, Z1
	VMOVUPS.Z (R11)(AX*1), K1, Z2
	VMOVUPS.Z (DX)(AX*1), K1, Z3
	VMOVDQU16.Z (DI), K1, Y5
	WIDEN16(Y5, Z4)
	VFMADD231PS Z4, Z0, Z16
	VFMADD231PS Z4, Z1, Z20
	VFMADD231PS Z4, Z2, Z24
	VFMADD231PS Z4, Z3, Z28
	VMOVDQU16.Z (R12), K1, Y5
	WIDEN16(Y5, Z4)
	VFMADD231PS Z4, Z0, Z17
	VFMADD231PS Z4, Z1, Z21
	VFMADD231PS Z4, Z2, Z25
	VFMADD231PS Z4, Z3, Z29
	VMOVDQU16.Z (R13), K1, Y5
	WIDEN16(Y5, Z4)
	VFMADD231PS Z4, Z0, Z18
	VFMADD231PS Z4, Z1, Z22
	VFMADD231PS Z4, Z2, Z26
	VFMADD231PS Z4, Z3, Z30
	VMOVDQU16.Z (BX), K1, Y5
	WIDEN16(Y5, Z4)
	VFMADD231PS Z4, Z0, Z19
	VFMADD231PS Z4, Z1, Z23
	VFMADD231PS Z4, Z2, Z27
	VFMADD231PS Z4, Z3, Z31

hdot16reduce:
	MOVQ         c+40(FP), SI
	MOVQ         ldc+48(FP), R9
	SHLQ         $2, R9
	VBROADCASTSS alpha+56(FP), X2
	VBROADCASTSS beta+60(FP), X3
	MOVL         beta+60(FP), CX
	ANDL         $0x7fffffff, CX
	FOLD4(Z16, Z17, Z18, Z19)
	TESTL CX, CX
	JZ hdot16store0
	VFMADD231PS (SI), X3, X0
hdot16store0:
	VMOVUPS X0, (SI)
	ADDQ R9, SI
	FOLD4(Z20, Z21, Z22, Z23)
	TESTL CX, CX
	JZ hdot16store1
	VFMADD231PS (SI), X3, X0
hdot16store1:
	VMOVUPS X0, (SI)
	ADDQ R9, SI
	FOLD4(Z24, Z25, Z26, Z27)
	TESTL CX, CX
	JZ hdot16store2
	VFMADD231PS (SI), X3, X0
hdot16store2:
	VMOVUPS X0, (SI)
	ADDQ R9, SI
	FOLD4(Z28, Z29, Z30, Z31)
	TESTL CX, CX
	JZ hdot16store3
	VFMADD231PS (SI), X3, X0
hdot16store3:
	VMOVUPS X0, (SI)
	VZEROUPPER
	RET

// func WDOTSTREAM2(k int, a *float32, b0 *uint16, b1 *uint16, rows int, ldb int, c0 *float32, c1 *float32, alpha float32, beta float32)
//
// sdotStream2AVX512 with B in 16 bits, widened as in WDOT4X4: one row of
// A against rows consecutive rows from b0 and as many from b1, pairwise,
// so B is read as two sequential streams; each element is the float32
// kernel's on B widened, bit for bit. R13 is the byte offset along B's
// rows (A's is twice it).
TEXT WDOTSTREAM2(SB), NOSPLIT, $0-72
	STREAM2ARGS($1)
	MOVQ CX, AX
	ANDL $15, CX
	MOVL $1, BX
	SHLL CX, BX
	DECL BX
	KMOVW BX, K1
	MOVQ AX, CX

w2row:
	TESTQ R8, R8
	JZ w2done
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	XORQ R13, R13
	MOVQ CX, BX

w2loop32:
	CMPQ BX, $32
	JL w2loop16
	VMOVUPS (SI)(R13*2), Z0
	WIDEN16((DI)(R13*1), Z4)
	VFMADD231PS Z4, Z0, Z16
	WIDEN16((R12)(R13*1), Z5)
	VFMADD231PS Z5, Z0, Z17
	VMOVUPS 64(SI)(R13*2), Z1
	WIDEN16(32(DI)(R13*1), Z6)
	VFMADD231PS Z6, Z1, Z16
	WIDEN16(32(R12)(R13*1), Z7)
	VFMADD231PS Z7, Z1, Z17
	ADDQ $64, R13
	SUBQ $32, BX
	JMP w2loop32

w2loop16:
	CMPQ BX, $16
	JL w2tail
	VMOVUPS (SI)(R13*2), Z0
	WIDEN16((DI)(R13*1), Z4)
	VFMADD231PS Z4, Z0, Z16
	WIDEN16((R12)(R13*1), Z5)
	VFMADD231PS Z5, Z0, Z17
	ADDQ $32, R13
	SUBQ $16, BX

w2tail:
	TESTQ BX, BX
	JZ w2reduce
	VMOVUPS.Z (SI)(R13*2), K1, Z0
	VMOVDQU16.Z (DI)(R13*1), K1, Y6
	WIDEN16(Y6, Z4)
	VFMADD231PS Z4, Z0, Z16
	VMOVDQU16.Z (R12)(R13*1), K1, Y7
	WIDEN16(Y7, Z5)
	VFMADD231PS Z5, Z0, Z17

w2reduce:
	FOLD4(Z16, Z17, Z16, Z17)
	STREAM2NEXT(w2store, w2row)

w2done:
	VZEROUPPER
	RET
