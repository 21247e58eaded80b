//go:build amd64 && !purego

#include "textflag.h"
#include "dotfold_amd64.h"

// The dot kernels with B in half precision: VCVTPH2PS widens it exactly.
#define WIDEN16(src, dst) VCVTPH2PS src, dst
#define WDOT4X4 ·hdotKernel4x4AVX512
#define WDOTSTREAM2 ·hdotStream2AVX512
#include "widedot_amd64.h"

// The AVX2 twins of sdotKernel3x4 and sdotStream2AVX2.
#define WIDEN8(src, dst) VCVTPH2PS src, dst
#define W2DOT3X4 ·hdotKernel3x4AVX2
#define W2DOTSTREAM2 ·hdotStream2AVX2
#include "widedot2_amd64.h"

// func widenF16F16C(dst *float32, src *F16, n int)
//
// dst[i] = src[i] widened to float32 (VCVTPH2PS, exact) for i < n, n a
// multiple of 8. Needs F16C and AVX.
TEXT ·widenF16F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

hwiden32:
	CMPQ CX, $32
	JL hwiden8
	VCVTPH2PS (SI), Y0
	VCVTPH2PS 16(SI), Y1
	VCVTPH2PS 32(SI), Y2
	VCVTPH2PS 48(SI), Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ $64, SI
	ADDQ $128, DI
	SUBQ $32, CX
	JMP hwiden32

hwiden8:
	CMPQ CX, $8
	JL hwidendone
	VCVTPH2PS (SI), Y0
	VMOVUPS Y0, (DI)
	ADDQ $16, SI
	ADDQ $32, DI
	SUBQ $8, CX
	JMP hwiden8

hwidendone:
	VZEROUPPER
	RET
