//go:build amd64 && !purego

#include "textflag.h"
#include "dotfold_amd64.h"

// The Go assembler has no AVX512_BF16 mnemonics, so VDPBF16PS is written
// as its EVEX bytes (the register-register form, EVEX.512.F3.0F38.W0 52 /r),
// each line commented with the instruction in Go operand order: source 2,
// source 1, destination. TestBF16Encodings re-encodes every such comment
// and checks the bytes. Their arithmetic is checked against a Go
// emulation of the instruction (bf16_test.go).

// PREFETCH4ROWS asks for the lines at IDX past B's four row pointers (DI,
// R12, R13, BX), into L2: the rows of the next tile at this depth. Rows of
// a few KiB are streams too short for the hardware prefetchers to follow.
#define PREFETCH4ROWS(IDX) \
	PREFETCHT1 (DI)(IDX);  \
	PREFETCHT1 (R12)(IDX); \
	PREFETCHT1 (R13)(IDX); \
	PREFETCHT1 (BX)(IDX)

// func bdotKernel4x4(k int, a *BF16, lda int, b *BF16, ldb int, c *float32, ldc int, alpha float32, beta float32)
//
// A 4×4 tile of bfloat16 dot products for A·Bᵀ (AVX512_BF16). Rows 0-3
// of A are at SI, R10, R11, DX, rows 0-3 of B at DI, R12, R13, BX; the
// pointers move 64 bytes per group of 32 elements. The accumulator for
// (r, j) is Z(16+4r+j): VDPBF16PS adds to its lane l the products of the
// pair of elements 2l and 2l+1 of each group of 32 (the odd one first,
// each product exact and each sum rounded, as the instruction defines),
// group after group in order; the last partial group is loaded under
// the mask K1 with the other elements zeroed. Each accumulator is then
// folded to 8 lanes (low half + high half) and reduced pairwise, as in
// sdotKernel4x4AVX512.
TEXT ·bdotKernel4x4(SB), NOSPLIT, $0-64
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $1, R8
	LEAQ (SI)(R8*1), R10
	LEAQ (R10)(R8*1), R11
	LEAQ (R11)(R8*1), DX
	SHLQ $2, R8
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R9
	SHLQ $1, R9
	LEAQ (DI)(R9*1), R12
	LEAQ (R12)(R9*1), R13
	LEAQ (R13)(R9*1), BX
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

bd4loop:
	CMPQ CX, $32
	JL bd4tail
	PREFETCH4ROWS(R9*4) // the next 4 rows
	VMOVDQU16 (SI), Z0
	VMOVDQU16 (R10), Z1
	VMOVDQU16 (R11), Z2
	VMOVDQU16 (DX), Z3
	VMOVDQU16 (DI), Z4
	BYTE $0x62; BYTE $0xe2; BYTE $0x7e; BYTE $0x48; BYTE $0x52; BYTE $0xc4 // VDPBF16PS Z4, Z0, Z16
	BYTE $0x62; BYTE $0xe2; BYTE $0x76; BYTE $0x48; BYTE $0x52; BYTE $0xe4 // VDPBF16PS Z4, Z1, Z20
	BYTE $0x62; BYTE $0x62; BYTE $0x6e; BYTE $0x48; BYTE $0x52; BYTE $0xc4 // VDPBF16PS Z4, Z2, Z24
	BYTE $0x62; BYTE $0x62; BYTE $0x66; BYTE $0x48; BYTE $0x52; BYTE $0xe4 // VDPBF16PS Z4, Z3, Z28
	VMOVDQU16 (R12), Z4
	BYTE $0x62; BYTE $0xe2; BYTE $0x7e; BYTE $0x48; BYTE $0x52; BYTE $0xcc // VDPBF16PS Z4, Z0, Z17
	BYTE $0x62; BYTE $0xe2; BYTE $0x76; BYTE $0x48; BYTE $0x52; BYTE $0xec // VDPBF16PS Z4, Z1, Z21
	BYTE $0x62; BYTE $0x62; BYTE $0x6e; BYTE $0x48; BYTE $0x52; BYTE $0xcc // VDPBF16PS Z4, Z2, Z25
	BYTE $0x62; BYTE $0x62; BYTE $0x66; BYTE $0x48; BYTE $0x52; BYTE $0xec // VDPBF16PS Z4, Z3, Z29
	VMOVDQU16 (R13), Z4
	BYTE $0x62; BYTE $0xe2; BYTE $0x7e; BYTE $0x48; BYTE $0x52; BYTE $0xd4 // VDPBF16PS Z4, Z0, Z18
	BYTE $0x62; BYTE $0xe2; BYTE $0x76; BYTE $0x48; BYTE $0x52; BYTE $0xf4 // VDPBF16PS Z4, Z1, Z22
	BYTE $0x62; BYTE $0x62; BYTE $0x6e; BYTE $0x48; BYTE $0x52; BYTE $0xd4 // VDPBF16PS Z4, Z2, Z26
	BYTE $0x62; BYTE $0x62; BYTE $0x66; BYTE $0x48; BYTE $0x52; BYTE $0xf4 // VDPBF16PS Z4, Z3, Z30
	VMOVDQU16 (BX), Z4
	BYTE $0x62; BYTE $0xe2; BYTE $0x7e; BYTE $0x48; BYTE $0x52; BYTE $0xdc // VDPBF16PS Z4, Z0, Z19
	BYTE $0x62; BYTE $0xe2; BYTE $0x76; BYTE $0x48; BYTE $0x52; BYTE $0xfc // VDPBF16PS Z4, Z1, Z23
	BYTE $0x62; BYTE $0x62; BYTE $0x6e; BYTE $0x48; BYTE $0x52; BYTE $0xdc // VDPBF16PS Z4, Z2, Z27
	BYTE $0x62; BYTE $0x62; BYTE $0x66; BYTE $0x48; BYTE $0x52; BYTE $0xfc // VDPBF16PS Z4, Z3, Z31
	ADDQ $64, SI
	ADDQ $64, R10
	ADDQ $64, R11
	ADDQ $64, DX
	ADDQ $64, DI
	ADDQ $64, R12
	ADDQ $64, R13
	ADDQ $64, BX
	SUBQ $32, CX
	JMP bd4loop

bd4tail:
	TESTQ CX, CX
	JZ bd4reduce
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVD AX, K1
	VMOVDQU16.Z (SI), K1, Z0
	VMOVDQU16.Z (R10), K1, Z1
	VMOVDQU16.Z (R11), K1, Z2
	VMOVDQU16.Z (DX), K1, Z3
	VMOVDQU16.Z (DI), K1, Z4
	BYTE $0x62; BYTE $0xe2; BYTE $0x7e; BYTE $0x48; BYTE $0x52; BYTE $0xc4 // VDPBF16PS Z4, Z0, Z16
	BYTE $0x62; BYTE $0xe2; BYTE $0x76; BYTE $0x48; BYTE $0x52; BYTE $0xe4 // VDPBF16PS Z4, Z1, Z20
	BYTE $0x62; BYTE $0x62; BYTE $0x6e; BYTE $0x48; BYTE $0x52; BYTE $0xc4 // VDPBF16PS Z4, Z2, Z24
	BYTE $0x62; BYTE $0x62; BYTE $0x66; BYTE $0x48; BYTE $0x52; BYTE $0xe4 // VDPBF16PS Z4, Z3, Z28
	VMOVDQU16.Z (R12), K1, Z4
	BYTE $0x62; BYTE $0xe2; BYTE $0x7e; BYTE $0x48; BYTE $0x52; BYTE $0xcc // VDPBF16PS Z4, Z0, Z17
	BYTE $0x62; BYTE $0xe2; BYTE $0x76; BYTE $0x48; BYTE $0x52; BYTE $0xec // VDPBF16PS Z4, Z1, Z21
	BYTE $0x62; BYTE $0x62; BYTE $0x6e; BYTE $0x48; BYTE $0x52; BYTE $0xcc // VDPBF16PS Z4, Z2, Z25
	BYTE $0x62; BYTE $0x62; BYTE $0x66; BYTE $0x48; BYTE $0x52; BYTE $0xec // VDPBF16PS Z4, Z3, Z29
	VMOVDQU16.Z (R13), K1, Z4
	BYTE $0x62; BYTE $0xe2; BYTE $0x7e; BYTE $0x48; BYTE $0x52; BYTE $0xd4 // VDPBF16PS Z4, Z0, Z18
	BYTE $0x62; BYTE $0xe2; BYTE $0x76; BYTE $0x48; BYTE $0x52; BYTE $0xf4 // VDPBF16PS Z4, Z1, Z22
	BYTE $0x62; BYTE $0x62; BYTE $0x6e; BYTE $0x48; BYTE $0x52; BYTE $0xd4 // VDPBF16PS Z4, Z2, Z26
	BYTE $0x62; BYTE $0x62; BYTE $0x66; BYTE $0x48; BYTE $0x52; BYTE $0xf4 // VDPBF16PS Z4, Z3, Z30
	VMOVDQU16.Z (BX), K1, Z4
	BYTE $0x62; BYTE $0xe2; BYTE $0x7e; BYTE $0x48; BYTE $0x52; BYTE $0xdc // VDPBF16PS Z4, Z0, Z19
	BYTE $0x62; BYTE $0xe2; BYTE $0x76; BYTE $0x48; BYTE $0x52; BYTE $0xfc // VDPBF16PS Z4, Z1, Z23
	BYTE $0x62; BYTE $0x62; BYTE $0x6e; BYTE $0x48; BYTE $0x52; BYTE $0xdc // VDPBF16PS Z4, Z2, Z27
	BYTE $0x62; BYTE $0x62; BYTE $0x66; BYTE $0x48; BYTE $0x52; BYTE $0xfc // VDPBF16PS Z4, Z3, Z31

bd4reduce:
	MOVQ         c+40(FP), SI
	MOVQ         ldc+48(FP), R9
	SHLQ         $2, R9
	VBROADCASTSS alpha+56(FP), X2
	VBROADCASTSS beta+60(FP), X3
	MOVL         beta+60(FP), CX
	ANDL         $0x7fffffff, CX
	VEXTRACTF64X4 $1, Z16, Y4
	VADDPS Z4, Z16, Z4
	VEXTRACTF64X4 $1, Z17, Y5
	VADDPS Z5, Z17, Z5
	VEXTRACTF64X4 $1, Z18, Y6
	VADDPS Z6, Z18, Z6
	VEXTRACTF64X4 $1, Z19, Y7
	VADDPS Z7, Z19, Z7
	VHADDPS Y5, Y4, Y0
	VHADDPS Y7, Y6, Y1
	VHADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMULPS X2, X0, X0
	TESTL CX, CX
	JZ bd4store0
	VFMADD231PS (SI), X3, X0
bd4store0:
	VMOVUPS X0, (SI)
	ADDQ R9, SI
	VEXTRACTF64X4 $1, Z20, Y4
	VADDPS Z4, Z20, Z4
	VEXTRACTF64X4 $1, Z21, Y5
	VADDPS Z5, Z21, Z5
	VEXTRACTF64X4 $1, Z22, Y6
	VADDPS Z6, Z22, Z6
	VEXTRACTF64X4 $1, Z23, Y7
	VADDPS Z7, Z23, Z7
	VHADDPS Y5, Y4, Y0
	VHADDPS Y7, Y6, Y1
	VHADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMULPS X2, X0, X0
	TESTL CX, CX
	JZ bd4store1
	VFMADD231PS (SI), X3, X0
bd4store1:
	VMOVUPS X0, (SI)
	ADDQ R9, SI
	VEXTRACTF64X4 $1, Z24, Y4
	VADDPS Z4, Z24, Z4
	VEXTRACTF64X4 $1, Z25, Y5
	VADDPS Z5, Z25, Z5
	VEXTRACTF64X4 $1, Z26, Y6
	VADDPS Z6, Z26, Z6
	VEXTRACTF64X4 $1, Z27, Y7
	VADDPS Z7, Z27, Z7
	VHADDPS Y5, Y4, Y0
	VHADDPS Y7, Y6, Y1
	VHADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMULPS X2, X0, X0
	TESTL CX, CX
	JZ bd4store2
	VFMADD231PS (SI), X3, X0
bd4store2:
	VMOVUPS X0, (SI)
	ADDQ R9, SI
	VEXTRACTF64X4 $1, Z28, Y4
	VADDPS Z4, Z28, Z4
	VEXTRACTF64X4 $1, Z29, Y5
	VADDPS Z5, Z29, Z5
	VEXTRACTF64X4 $1, Z30, Y6
	VADDPS Z6, Z30, Z6
	VEXTRACTF64X4 $1, Z31, Y7
	VADDPS Z7, Z31, Z7
	VHADDPS Y5, Y4, Y0
	VHADDPS Y7, Y6, Y1
	VHADDPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	VMULPS X2, X0, X0
	TESTL CX, CX
	JZ bd4store3
	VFMADD231PS (SI), X3, X0
bd4store3:
	VMOVUPS X0, (SI)
	VZEROUPPER
	RET

// func bdotStream2(k int, a *BF16, b0 *BF16, b1 *BF16, rows int, ldb int, c0 *float32, c1 *float32, alpha float32, beta float32)
//
// One row of A against rows consecutive rows from b0 and as many from b1,
// pairwise, so that B is read as two sequential streams (the 1-row
// products; see sdotStream2AVX512): c0[i] = alpha·a·b0[i]ᵀ + beta·c0[i],
// c1[i] likewise. Each element is summed exactly as in bdotKernel4x4 (the
// same lanes, pairs and masked tail; FOLD4 is its reduction tree) and
// beta is added as there, so it equals the element of a 4×4 tile bit for
// bit. AX is the byte offset along the rows of A and B.
TEXT ·bdotStream2(SB), NOSPLIT, $0-72
	STREAM2ARGS($1)
	MOVQ CX, AX
	ANDQ $31, CX
	MOVQ $1, BX
	SHLQ CX, BX
	DECQ BX
	KMOVD BX, K1
	MOVQ AX, CX

bs2row:
	TESTQ R8, R8
	JZ bs2done
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	XORQ AX, AX
	MOVQ CX, BX

bs2loop:
	CMPQ BX, $32
	JL bs2tail
	VMOVDQU16 (SI)(AX*1), Z0
	VMOVDQU16 (DI)(AX*1), Z1
	BYTE $0x62; BYTE $0xe2; BYTE $0x7e; BYTE $0x48; BYTE $0x52; BYTE $0xc1 // VDPBF16PS Z1, Z0, Z16
	VMOVDQU16 (R12)(AX*1), Z2
	BYTE $0x62; BYTE $0xe2; BYTE $0x7e; BYTE $0x48; BYTE $0x52; BYTE $0xca // VDPBF16PS Z2, Z0, Z17
	ADDQ $64, AX
	SUBQ $32, BX
	JMP bs2loop

bs2tail:
	TESTQ BX, BX
	JZ bs2reduce
	VMOVDQU16.Z (SI)(AX*1), K1, Z0
	VMOVDQU16.Z (DI)(AX*1), K1, Z1
	BYTE $0x62; BYTE $0xe2; BYTE $0x7e; BYTE $0x48; BYTE $0x52; BYTE $0xc1 // VDPBF16PS Z1, Z0, Z16
	VMOVDQU16.Z (R12)(AX*1), K1, Z2
	BYTE $0x62; BYTE $0xe2; BYTE $0x7e; BYTE $0x48; BYTE $0x52; BYTE $0xca // VDPBF16PS Z2, Z0, Z17

bs2reduce:
	VBROADCASTSS alpha+64(FP), X2 // Z2 held B's row
	FOLD4(Z16, Z17, Z16, Z17)
	STREAM2NEXT(bs2store, bs2row)

bs2done:
	VZEROUPPER
	RET
