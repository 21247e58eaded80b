//go:build amd64 && !purego

#include "textflag.h"

// The Go assembler has no AVX512_BF16 mnemonics, so VDPBF16PS is written
// as its EVEX bytes (the register-register form, EVEX.512.F3.0F38.W0 52 /r),
// each line commented with the instruction in Go operand order: source 2,
// source 1, destination. TestBF16Encodings re-encodes every such comment
// and checks the bytes. Their arithmetic is checked against a Go emulation
// of the instruction (bf16_test.go).

// func bgemmKernel12x32(kp int, a *BF16, lda int, b *BF16, c *float32, ldc int, alpha float32, beta float32)
//
// A 12×32 tile of C = alpha·A·B + beta·C over kp >= 1 pairs of depth steps
// (AVX512_BF16). A holds 12 rows of bfloat16, row r at a[r*lda:] (lda
// even), pair q its dword at elements 2q and 2q+1 (four base registers,
// rows 3i to 3i+2 at offsets 0, lda and 2·lda from the i-th); B is packed
// pair by pair, 32 dwords per pair, column j's elements 2q and 2q+1. The accumulators of row r are Z(8+2r) (columns
// 0-15) and Z(9+2r) (columns 16-31): each lane adds, pair after pair in
// order, the odd product then the even one (VDPBF16PS), so an element of C
// depends on its own row and column only. Then C = alpha·acc, plus beta·C
// unless beta is zero (C is not read then).
TEXT ·bgemmKernel12x32(SB), NOSPLIT, $0-56
	MOVQ kp+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	SHLQ $1, R8
	LEAQ (R8)(R8*2), R13
	LEAQ (SI)(R13*1), R10
	LEAQ (R10)(R13*1), R11
	LEAQ (R11)(R13*1), R12
	MOVQ b+24(FP), BX
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
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

bgloop:
	VMOVDQU32 (BX), Z0
	VMOVDQU32 64(BX), Z1
	VPBROADCASTD (SI), Z2
	BYTE $0x62; BYTE $0x72; BYTE $0x6e; BYTE $0x48; BYTE $0x52; BYTE $0xc0 // VDPBF16PS Z0, Z2, Z8
	BYTE $0x62; BYTE $0x72; BYTE $0x6e; BYTE $0x48; BYTE $0x52; BYTE $0xc9 // VDPBF16PS Z1, Z2, Z9
	VPBROADCASTD (SI)(R8*1), Z3
	BYTE $0x62; BYTE $0x72; BYTE $0x66; BYTE $0x48; BYTE $0x52; BYTE $0xd0 // VDPBF16PS Z0, Z3, Z10
	BYTE $0x62; BYTE $0x72; BYTE $0x66; BYTE $0x48; BYTE $0x52; BYTE $0xd9 // VDPBF16PS Z1, Z3, Z11
	VPBROADCASTD (SI)(R8*2), Z4
	BYTE $0x62; BYTE $0x72; BYTE $0x5e; BYTE $0x48; BYTE $0x52; BYTE $0xe0 // VDPBF16PS Z0, Z4, Z12
	BYTE $0x62; BYTE $0x72; BYTE $0x5e; BYTE $0x48; BYTE $0x52; BYTE $0xe9 // VDPBF16PS Z1, Z4, Z13
	VPBROADCASTD (R10), Z5
	BYTE $0x62; BYTE $0x72; BYTE $0x56; BYTE $0x48; BYTE $0x52; BYTE $0xf0 // VDPBF16PS Z0, Z5, Z14
	BYTE $0x62; BYTE $0x72; BYTE $0x56; BYTE $0x48; BYTE $0x52; BYTE $0xf9 // VDPBF16PS Z1, Z5, Z15
	VPBROADCASTD (R10)(R8*1), Z6
	BYTE $0x62; BYTE $0xe2; BYTE $0x4e; BYTE $0x48; BYTE $0x52; BYTE $0xc0 // VDPBF16PS Z0, Z6, Z16
	BYTE $0x62; BYTE $0xe2; BYTE $0x4e; BYTE $0x48; BYTE $0x52; BYTE $0xc9 // VDPBF16PS Z1, Z6, Z17
	VPBROADCASTD (R10)(R8*2), Z7
	BYTE $0x62; BYTE $0xe2; BYTE $0x46; BYTE $0x48; BYTE $0x52; BYTE $0xd0 // VDPBF16PS Z0, Z7, Z18
	BYTE $0x62; BYTE $0xe2; BYTE $0x46; BYTE $0x48; BYTE $0x52; BYTE $0xd9 // VDPBF16PS Z1, Z7, Z19
	VPBROADCASTD (R11), Z2
	BYTE $0x62; BYTE $0xe2; BYTE $0x6e; BYTE $0x48; BYTE $0x52; BYTE $0xe0 // VDPBF16PS Z0, Z2, Z20
	BYTE $0x62; BYTE $0xe2; BYTE $0x6e; BYTE $0x48; BYTE $0x52; BYTE $0xe9 // VDPBF16PS Z1, Z2, Z21
	VPBROADCASTD (R11)(R8*1), Z3
	BYTE $0x62; BYTE $0xe2; BYTE $0x66; BYTE $0x48; BYTE $0x52; BYTE $0xf0 // VDPBF16PS Z0, Z3, Z22
	BYTE $0x62; BYTE $0xe2; BYTE $0x66; BYTE $0x48; BYTE $0x52; BYTE $0xf9 // VDPBF16PS Z1, Z3, Z23
	VPBROADCASTD (R11)(R8*2), Z4
	BYTE $0x62; BYTE $0x62; BYTE $0x5e; BYTE $0x48; BYTE $0x52; BYTE $0xc0 // VDPBF16PS Z0, Z4, Z24
	BYTE $0x62; BYTE $0x62; BYTE $0x5e; BYTE $0x48; BYTE $0x52; BYTE $0xc9 // VDPBF16PS Z1, Z4, Z25
	VPBROADCASTD (R12), Z5
	BYTE $0x62; BYTE $0x62; BYTE $0x56; BYTE $0x48; BYTE $0x52; BYTE $0xd0 // VDPBF16PS Z0, Z5, Z26
	BYTE $0x62; BYTE $0x62; BYTE $0x56; BYTE $0x48; BYTE $0x52; BYTE $0xd9 // VDPBF16PS Z1, Z5, Z27
	VPBROADCASTD (R12)(R8*1), Z6
	BYTE $0x62; BYTE $0x62; BYTE $0x4e; BYTE $0x48; BYTE $0x52; BYTE $0xe0 // VDPBF16PS Z0, Z6, Z28
	BYTE $0x62; BYTE $0x62; BYTE $0x4e; BYTE $0x48; BYTE $0x52; BYTE $0xe9 // VDPBF16PS Z1, Z6, Z29
	VPBROADCASTD (R12)(R8*2), Z7
	BYTE $0x62; BYTE $0x62; BYTE $0x46; BYTE $0x48; BYTE $0x52; BYTE $0xf0 // VDPBF16PS Z0, Z7, Z30
	BYTE $0x62; BYTE $0x62; BYTE $0x46; BYTE $0x48; BYTE $0x52; BYTE $0xf9 // VDPBF16PS Z1, Z7, Z31
	ADDQ $4, SI
	ADDQ $4, R10
	ADDQ $4, R11
	ADDQ $4, R12
	ADDQ $128, BX
	DECQ CX
	JNZ bgloop

	MOVQ c+32(FP), DI
	MOVQ ldc+40(FP), R9
	SHLQ $2, R9
	VBROADCASTSS alpha+48(FP), Z2
	VBROADCASTSS beta+52(FP), Z3
	MOVL beta+52(FP), CX
	ANDL $0x7fffffff, CX
	TESTL CX, CX
	JZ bgstore0
	VMULPS Z2, Z8, Z8
	VMULPS Z2, Z9, Z9
	VFMADD231PS (DI), Z3, Z8
	VFMADD231PS 64(DI), Z3, Z9
	VMOVUPS Z8, (DI)
	VMOVUPS Z9, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z10, Z10
	VMULPS Z2, Z11, Z11
	VFMADD231PS (DI), Z3, Z10
	VFMADD231PS 64(DI), Z3, Z11
	VMOVUPS Z10, (DI)
	VMOVUPS Z11, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z12, Z12
	VMULPS Z2, Z13, Z13
	VFMADD231PS (DI), Z3, Z12
	VFMADD231PS 64(DI), Z3, Z13
	VMOVUPS Z12, (DI)
	VMOVUPS Z13, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z14, Z14
	VMULPS Z2, Z15, Z15
	VFMADD231PS (DI), Z3, Z14
	VFMADD231PS 64(DI), Z3, Z15
	VMOVUPS Z14, (DI)
	VMOVUPS Z15, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z16, Z16
	VMULPS Z2, Z17, Z17
	VFMADD231PS (DI), Z3, Z16
	VFMADD231PS 64(DI), Z3, Z17
	VMOVUPS Z16, (DI)
	VMOVUPS Z17, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z18, Z18
	VMULPS Z2, Z19, Z19
	VFMADD231PS (DI), Z3, Z18
	VFMADD231PS 64(DI), Z3, Z19
	VMOVUPS Z18, (DI)
	VMOVUPS Z19, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z20, Z20
	VMULPS Z2, Z21, Z21
	VFMADD231PS (DI), Z3, Z20
	VFMADD231PS 64(DI), Z3, Z21
	VMOVUPS Z20, (DI)
	VMOVUPS Z21, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z22, Z22
	VMULPS Z2, Z23, Z23
	VFMADD231PS (DI), Z3, Z22
	VFMADD231PS 64(DI), Z3, Z23
	VMOVUPS Z22, (DI)
	VMOVUPS Z23, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z24, Z24
	VMULPS Z2, Z25, Z25
	VFMADD231PS (DI), Z3, Z24
	VFMADD231PS 64(DI), Z3, Z25
	VMOVUPS Z24, (DI)
	VMOVUPS Z25, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z26, Z26
	VMULPS Z2, Z27, Z27
	VFMADD231PS (DI), Z3, Z26
	VFMADD231PS 64(DI), Z3, Z27
	VMOVUPS Z26, (DI)
	VMOVUPS Z27, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z28, Z28
	VMULPS Z2, Z29, Z29
	VFMADD231PS (DI), Z3, Z28
	VFMADD231PS 64(DI), Z3, Z29
	VMOVUPS Z28, (DI)
	VMOVUPS Z29, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z30, Z30
	VMULPS Z2, Z31, Z31
	VFMADD231PS (DI), Z3, Z30
	VFMADD231PS 64(DI), Z3, Z31
	VMOVUPS Z30, (DI)
	VMOVUPS Z31, 64(DI)
	VZEROUPPER
	RET

bgstore0:
	VMULPS Z2, Z8, Z8
	VMULPS Z2, Z9, Z9
	VMOVUPS Z8, (DI)
	VMOVUPS Z9, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z10, Z10
	VMULPS Z2, Z11, Z11
	VMOVUPS Z10, (DI)
	VMOVUPS Z11, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z12, Z12
	VMULPS Z2, Z13, Z13
	VMOVUPS Z12, (DI)
	VMOVUPS Z13, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z14, Z14
	VMULPS Z2, Z15, Z15
	VMOVUPS Z14, (DI)
	VMOVUPS Z15, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z16, Z16
	VMULPS Z2, Z17, Z17
	VMOVUPS Z16, (DI)
	VMOVUPS Z17, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z18, Z18
	VMULPS Z2, Z19, Z19
	VMOVUPS Z18, (DI)
	VMOVUPS Z19, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z20, Z20
	VMULPS Z2, Z21, Z21
	VMOVUPS Z20, (DI)
	VMOVUPS Z21, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z22, Z22
	VMULPS Z2, Z23, Z23
	VMOVUPS Z22, (DI)
	VMOVUPS Z23, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z24, Z24
	VMULPS Z2, Z25, Z25
	VMOVUPS Z24, (DI)
	VMOVUPS Z25, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z26, Z26
	VMULPS Z2, Z27, Z27
	VMOVUPS Z26, (DI)
	VMOVUPS Z27, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z28, Z28
	VMULPS Z2, Z29, Z29
	VMOVUPS Z28, (DI)
	VMOVUPS Z29, 64(DI)
	ADDQ R9, DI
	VMULPS Z2, Z30, Z30
	VMULPS Z2, Z31, Z31
	VMOVUPS Z30, (DI)
	VMOVUPS Z31, 64(DI)
	VZEROUPPER
	RET

// func interleaveBF16AVX2(dst *uint32, even *BF16, odd *BF16, n int)
//
// dst[j] = even[j] | odd[j]<<16 for j < n, n a multiple of 16: two rows of
// bfloat16 woven into pairs (the packed route's B panel for B stored k×n).
// VPUNPCKLWD and VPUNPCKHWD weave within 128-bit lanes; VPERM2I128 puts
// the four half results back in order. Data movement only.
TEXT ·interleaveBF16AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ even+8(FP), SI
	MOVQ odd+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $4, CX
	JZ   ileavedone

ileaveloop:
	VMOVDQU (SI), Y0
	VMOVDQU (DX), Y1
	VPUNPCKLWD Y1, Y0, Y2
	VPUNPCKHWD Y1, Y0, Y3
	VPERM2I128 $0x20, Y3, Y2, Y4
	VPERM2I128 $0x31, Y3, Y2, Y5
	VMOVDQU Y4, (DI)
	VMOVDQU Y5, 32(DI)
	ADDQ $32, SI
	ADDQ $32, DX
	ADDQ $64, DI
	DECQ CX
	JNZ  ileaveloop

ileavedone:
	VZEROUPPER
	RET

DATA splitconsts<>+0x00(SB)/4, $0x7fffffff // abs mask
DATA splitconsts<>+0x04(SB)/4, $0x7f800000 // +Inf: above it (abs) is NaN
DATA splitconsts<>+0x08(SB)/4, $0x00007fff // rounding bias
DATA splitconsts<>+0x0c(SB)/4, $0x00000001
DATA splitconsts<>+0x10(SB)/4, $0x00000040 // quiet bit of a bfloat16 NaN
GLOBL splitconsts<>(SB), RODATA|NOPTR, $20

// ROUNDBF16 sets the dwords of dst to those of src (float32 bits) rounded
// to bfloat16 as ToBF16 rounds them (to nearest, ties to even, a NaN kept
// quiet with its sign), in their low halves: integer arithmetic on the
// bits, bits + 0x7fff + (bits>>16 & 1) shifted down 16, the NaNs
// (|bits| > 0x7f800000) replaced by bits>>16 | 0x40 under mask k. It needs
// splitconsts in Z20-Z24 and clobbers Z2-Z4.
#define ROUNDBF16(src, dst, k) \
	VPSRLD $16, src, Z2 \
	VPANDD Z23, Z2, Z3 \
	VPADDD Z22, src, dst \
	VPADDD Z3, dst, dst \
	VPSRLD $16, dst, dst \
	VPANDD Z20, src, Z4 \
	VPCMPUD $6, Z21, Z4, k \
	VPORD Z24, Z2, k, dst

#define SPLITCONSTS \
	VPBROADCASTD splitconsts<>+0x00(SB), Z20 \
	VPBROADCASTD splitconsts<>+0x04(SB), Z21 \
	VPBROADCASTD splitconsts<>+0x08(SB), Z22 \
	VPBROADCASTD splitconsts<>+0x0c(SB), Z23 \
	VPBROADCASTD splitconsts<>+0x10(SB), Z24

// func roundBF16AVX512(dst *BF16, x *float32, n int)
//
// dst[i] = ToBF16(x[i]) for i < n, n a multiple of 16 (ROUNDBF16; VPMOVDW
// keeps each dword's low half).
TEXT ·roundBF16AVX512(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	JZ   rounddone
	SPLITCONSTS

roundloop:
	VMOVDQU32 (SI), Z0
	ROUNDBF16(Z0, Z1, K1)
	VPMOVDW Z1, (DI)
	ADDQ $64, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  roundloop

rounddone:
	VZEROUPPER
	RET

// func splitBF16AVX512(hi *BF16, lo *BF16, x *float32, n int)
//
// hi[i], lo[i] = splitBF16(x[i]) for i < n, n a multiple of 16: hi is x
// rounded to bfloat16 by ROUNDBF16, lo is x − hi rounded the same way;
// VPMOVDW keeps each dword's low half.
TEXT ·splitBF16AVX512(SB), NOSPLIT, $0-32
	MOVQ hi+0(FP), DI
	MOVQ lo+8(FP), DX
	MOVQ x+16(FP), SI
	MOVQ n+24(FP), CX
	SHRQ $4, CX
	JZ   splitdone
	SPLITCONSTS

splitloop:
	VMOVDQU32 (SI), Z0
	ROUNDBF16(Z0, Z1, K1)
	// lo: x − widen(hi), rounded the same way
	VPSLLD $16, Z1, Z5
	VSUBPS Z5, Z0, Z6
	ROUNDBF16(Z6, Z7, K2)
	VPMOVDW Z1, (DI)
	VPMOVDW Z7, (DX)
	ADDQ $64, SI
	ADDQ $32, DI
	ADDQ $32, DX
	DECQ CX
	JNZ  splitloop

splitdone:
	VZEROUPPER
	RET

// func widenBF16AVX2(dst *float32, src *BF16, n int)
//
// dst[i] = src[i] widened to float32 (its 16 bits moved to the top of a
// dword) for i < n, n a multiple of 8. Data movement only.
TEXT ·widenBF16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

widen32:
	CMPQ CX, $32
	JL widen8
	VPMOVZXWD (SI), Y0
	VPMOVZXWD 16(SI), Y1
	VPMOVZXWD 32(SI), Y2
	VPMOVZXWD 48(SI), Y3
	VPSLLD $16, Y0, Y0
	VPSLLD $16, Y1, Y1
	VPSLLD $16, Y2, Y2
	VPSLLD $16, Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP widen32

widen8:
	CMPQ CX, $8
	JL widendone
	VPMOVZXWD (SI), Y0
	VPSLLD $16, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP widen8

widendone:
	VZEROUPPER
	RET
