//go:build amd64 && !purego

#include "textflag.h"

// SWIGLUSTEP is swiglu32 on the sixteen lanes of Z0 (g) and Z8 (u): σ into
// Z5, h into Z6, with swigluAVX512's constants in Z16-Z31. expf's
// operations one for one in float32: x = −g (sign flipped), fn =
// floor(x·log₂e + 0.5) (VRNDSCALEPS $1), r = (x − fn·ln2Hi) − fn·ln2Lo,
// z = r², the polynomial by separate multiplies and adds in Go's order,
// times 2^min(n, 127) built in the exponent bits and doubled where n =
// 128, then +Inf above expfMax and 0 below expfMin (a NaN falls through
// both compares and stays NaN); σ = 1/(1 + e), h = (g·σ)·u.
#define SWIGLUSTEP \
	VXORPS      Z31, Z0, Z1; \
	VMULPS      Z16, Z1, Z2; \
	VADDPS      Z17, Z2, Z2; \
	VRNDSCALEPS $1, Z2, Z2; \
	VMULPS      Z18, Z2, Z3; \
	VSUBPS      Z3, Z1, Z3; \
	VMULPS      Z19, Z2, Z4; \
	VSUBPS      Z4, Z3, Z3; \
	VMULPS      Z3, Z3, Z4; \
	VMULPS      Z3, Z22, Z5; \
	VADDPS      Z23, Z5, Z5; \
	VMULPS      Z3, Z5, Z5; \
	VADDPS      Z24, Z5, Z5; \
	VMULPS      Z3, Z5, Z5; \
	VADDPS      Z25, Z5, Z5; \
	VMULPS      Z3, Z5, Z5; \
	VADDPS      Z26, Z5, Z5; \
	VMULPS      Z3, Z5, Z5; \
	VADDPS      Z27, Z5, Z5; \
	VMULPS      Z4, Z5, Z5; \
	VADDPS      Z3, Z5, Z5; \
	VADDPS      Z28, Z5, Z5; \
	VCVTTPS2DQ  Z2, Z6; \
	VPMINSD     Z30, Z6, Z7; \
	VPADDD      Z30, Z7, Z7; \
	VPSLLD      $23, Z7, Z7; \
	VMULPS      Z7, Z5, Z5; \
	VPCMPGTD    Z30, Z6, K2; \
	VADDPS      Z5, Z5, K2, Z5; \
	VCMPPS      $0x1e, Z20, Z1, K3; \
	VMOVAPS     Z29, K3, Z5; \
	VCMPPS      $0x11, Z21, Z1, K4; \
	VPXORD      Z5, Z5, K4, Z5; \
	VADDPS      Z28, Z5, Z5; \
	VDIVPS      Z5, Z28, Z5; \
	VMULPS      Z5, Z0, Z6; \
	VMULPS      Z8, Z6, Z6

// func swigluAVX512(gate, up, h, sg *float32, n int, consts *float32)
//
// SwiGLU over n >= 1 elements, sixteen a step, the last partial step under
// the mask K1 (loads zeroed, stores masked); sg nil skips σ's store.
// consts: log₂e, 0.5, ln2Hi, ln2Lo, expfMax, expfMin, C6..C1, 1, +Inf, −0
// (swigluConsts).
TEXT ·swigluAVX512(SB), NOSPLIT, $0-48
	MOVQ         gate+0(FP), SI
	MOVQ         up+8(FP), DI
	MOVQ         h+16(FP), R9
	MOVQ         sg+24(FP), R10
	MOVQ         n+32(FP), CX
	MOVQ         consts+40(FP), AX
	VBROADCASTSS 0(AX), Z16
	VBROADCASTSS 4(AX), Z17
	VBROADCASTSS 8(AX), Z18
	VBROADCASTSS 12(AX), Z19
	VBROADCASTSS 16(AX), Z20
	VBROADCASTSS 20(AX), Z21
	VBROADCASTSS 24(AX), Z22
	VBROADCASTSS 28(AX), Z23
	VBROADCASTSS 32(AX), Z24
	VBROADCASTSS 36(AX), Z25
	VBROADCASTSS 40(AX), Z26
	VBROADCASTSS 44(AX), Z27
	VBROADCASTSS 48(AX), Z28
	VBROADCASTSS 52(AX), Z29
	VBROADCASTSS 56(AX), Z31
	MOVL         $127, R8
	VPBROADCASTD R8, Z30

sgstep:
	CMPQ    CX, $16
	JL      sgtail
	VMOVUPS (SI), Z0
	VMOVUPS (DI), Z8
	SWIGLUSTEP
	TESTQ   R10, R10
	JZ      sgnosig
	VMOVUPS Z5, (R10)
	ADDQ    $64, R10

sgnosig:
	VMOVUPS Z6, (R9)
	ADDQ    $64, SI
	ADDQ    $64, DI
	ADDQ    $64, R9
	SUBQ    $16, CX
	JMP     sgstep

sgtail:
	TESTQ       CX, CX
	JZ          sgdone
	MOVL        $1, R8
	SHLL        CX, R8
	DECL        R8
	KMOVW       R8, K1
	VMOVUPS.Z   (SI), K1, Z0
	VMOVUPS.Z   (DI), K1, Z8
	SWIGLUSTEP
	TESTQ       R10, R10
	JZ          sgtailh
	VMOVUPS     Z5, K1, (R10)

sgtailh:
	VMOVUPS Z6, K1, (R9)

sgdone:
	VZEROUPPER
	RET
