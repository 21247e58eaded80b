//go:build amd64 && !purego

#include "textflag.h"

// EXPSTEP is expF64 of Z0 − Z29 (the shift) in each of Z0's eight lanes,
// into Z2 (Z1 ends as n, Z0 as r), with EXPCONSTS's registers.
#define EXPSTEP \
	VSUBPD      Z29, Z0, Z0; \
	VMAXPD      Z0, Z27, Z0; \
	VMINPD      Z0, Z28, Z0; \
	VMULPD      Z24, Z0, Z1; \
	VRNDSCALEPD $0, Z1, Z1; \
	VFNMADD231PD Z25, Z1, Z0; \
	VFNMADD231PD Z26, Z1, Z0; \
	VMOVAPD     Z10, Z2; \
	VFMADD213PD Z11, Z0, Z2; \
	VFMADD213PD Z12, Z0, Z2; \
	VFMADD213PD Z13, Z0, Z2; \
	VFMADD213PD Z14, Z0, Z2; \
	VFMADD213PD Z15, Z0, Z2; \
	VFMADD213PD Z16, Z0, Z2; \
	VFMADD213PD Z17, Z0, Z2; \
	VFMADD213PD Z18, Z0, Z2; \
	VFMADD213PD Z19, Z0, Z2; \
	VFMADD213PD Z20, Z0, Z2; \
	VFMADD213PD Z21, Z0, Z2; \
	VFMADD213PD Z22, Z0, Z2; \
	VFMADD213PD Z23, Z0, Z2; \
	VSCALEFPD   Z1, Z2, Z2

// EXPCONSTS loads expConsts (at AX) into Z10-Z28: the polynomial's 14
// coefficients in Z10-Z23, log₂e, ln2Hi and ln2Lo in Z24-Z26, −clamp in
// Z27 and the clamp in Z28.
#define EXPCONSTS \
	VBROADCASTSD 0(AX), Z24; \
	VBROADCASTSD 8(AX), Z25; \
	VBROADCASTSD 16(AX), Z26; \
	VBROADCASTSD 24(AX), Z28; \
	VXORPD       Z27, Z27, Z27; \
	VSUBPD       Z28, Z27, Z27; \
	VBROADCASTSD 32(AX), Z10; \
	VBROADCASTSD 40(AX), Z11; \
	VBROADCASTSD 48(AX), Z12; \
	VBROADCASTSD 56(AX), Z13; \
	VBROADCASTSD 64(AX), Z14; \
	VBROADCASTSD 72(AX), Z15; \
	VBROADCASTSD 80(AX), Z16; \
	VBROADCASTSD 88(AX), Z17; \
	VBROADCASTSD 96(AX), Z18; \
	VBROADCASTSD 104(AX), Z19; \
	VBROADCASTSD 112(AX), Z20; \
	VBROADCASTSD 120(AX), Z21; \
	VBROADCASTSD 128(AX), Z22; \
	VBROADCASTSD 136(AX), Z23

// func expShiftAVX512(x *float32, n int, shift, mul float64, store bool, lanes *[8]float64, consts *float64)
//
// ExpShift's loop over x[0:n], n a multiple of 8, eight elements a step:
// widened to float64, shift subtracted, clamped to [−1000, 1000] with a
// NaN kept (VMAXPD and VMINPD return their second source, here the value,
// when either is a NaN), then expF64's operations one for one: n =
// round-to-even(t·log₂e) (VRNDSCALEPD $0), r = t − n·ln2Hi − n·ln2Lo
// (VFNMADD231PD, one rounding each as math.FMA), Horner's 13 FMAs, and
// p·2ⁿ (VSCALEFPD, which rounds once as math.Ldexp does). Lane l adds
// the step's element l; with store, each element times mul is written
// back rounded to float32 (VCVTPD2PS, to nearest as Go's conversion). consts holds
// log₂e, ln2Hi, ln2Lo, the clamp, then the 14 coefficients (expConsts).
TEXT ·expShiftAVX512(SB), NOSPLIT, $0-56
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD shift+16(FP), Z29
	VBROADCASTSD mul+24(FP), Z30
	MOVBLZX      store+32(FP), DX
	MOVQ         lanes+40(FP), DI
	MOVQ         consts+48(FP), AX
	EXPCONSTS
	VMOVUPD      (DI), Z9 // the lanes so far

expstep:
	TESTQ       CX, CX
	JZ          expdone
	VCVTPS2PD   (SI), Z0
	EXPSTEP
	VADDPD      Z2, Z9, Z9
	TESTQ       DX, DX
	JZ          expnext
	VMULPD      Z30, Z2, Z3
	VCVTPD2PS   Z3, Y3
	VMOVUPS     Y3, (SI)

expnext:
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  expstep

expdone:
	VMOVUPD Z9, (DI)
	VZEROUPPER
	RET

// func expSumAVX512F64(x *float64, n int, shift float64, lanes *[8]float64, consts *float64)
//
// expShiftAVX512's sum over float64 elements x[0:n], n a multiple of 8,
// without writing them.
TEXT ·expSumAVX512F64(SB), NOSPLIT, $0-40
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD shift+16(FP), Z29
	MOVQ         lanes+24(FP), DI
	MOVQ         consts+32(FP), AX
	EXPCONSTS
	VMOVUPD      (DI), Z9

exp64step:
	TESTQ  CX, CX
	JZ     exp64done
	VMOVUPD (SI), Z0
	EXPSTEP
	VADDPD Z2, Z9, Z9
	ADDQ   $64, SI
	SUBQ   $8, CX
	JMP    exp64step

exp64done:
	VMOVUPD Z9, (DI)
	VZEROUPPER
	RET

// The AVX2 exponential works on four float64 lanes at a time, its
// constants read from expConsts4 (at AX, each broadcast to 32 bytes):
// 0 log₂e, 32 ln2Hi, 64 ln2Lo, 96 the clamp, 128 −clamp, 160 the magic
// 1.5·2⁵², 192 the integer 1023 − bits(1.5·2⁵²), 224 0.5, then from 256
// the 14 coefficients.
//
// EXP4 is expF64 of Y0 − Y13 (the shift) in each of Y0's four lanes, into
// Y2 (Y0 ends as r; clobbers Y1, Y3-Y6). With no VSCALEFPD in AVX2, p·2ⁿ
// is p·2ʰ·2ⁿ⁻ʰ with h = floor(n/2): both factors are normal for the
// clamped |n| <= 1443 and built from their exponent bits (h + 1.5·2⁵²
// holds h in its low bits), p·2ʰ is exact and the second product rounds
// once, as VSCALEFPD and math.Ldexp do.
#define EXP4 \
	VSUBPD       Y13, Y0, Y0; \
	VMAXPD       Y0, Y12, Y0; \
	VMINPD       Y0, Y11, Y0; \
	VMULPD       0(AX), Y0, Y1; \
	VROUNDPD     $0, Y1, Y1; \
	VFNMADD231PD 32(AX), Y1, Y0; \
	VFNMADD231PD 64(AX), Y1, Y0; \
	VMOVUPD      256(AX), Y2; \
	VFMADD213PD  288(AX), Y0, Y2; \
	VFMADD213PD  320(AX), Y0, Y2; \
	VFMADD213PD  352(AX), Y0, Y2; \
	VFMADD213PD  384(AX), Y0, Y2; \
	VFMADD213PD  416(AX), Y0, Y2; \
	VFMADD213PD  448(AX), Y0, Y2; \
	VFMADD213PD  480(AX), Y0, Y2; \
	VFMADD213PD  512(AX), Y0, Y2; \
	VFMADD213PD  544(AX), Y0, Y2; \
	VFMADD213PD  576(AX), Y0, Y2; \
	VFMADD213PD  608(AX), Y0, Y2; \
	VFMADD213PD  640(AX), Y0, Y2; \
	VFMADD213PD  672(AX), Y0, Y2; \
	VMULPD       224(AX), Y1, Y5; \
	VROUNDPD     $1, Y5, Y5; \
	VSUBPD       Y5, Y1, Y6; \
	VADDPD       160(AX), Y5, Y5; \
	VPADDQ       192(AX), Y5, Y5; \
	VPSLLQ       $52, Y5, Y5; \
	VADDPD       160(AX), Y6, Y6; \
	VPADDQ       192(AX), Y6, Y6; \
	VPSLLQ       $52, Y6, Y6; \
	VMULPD       Y5, Y2, Y2; \
	VMULPD       Y6, Y2, Y2

// func expShiftAVX2(x *float32, n int, shift, mul float64, store bool, lanes *[8]float64, consts *float64)
//
// expShiftAVX512 in AVX2: eight elements a step in two halves of four
// (lanes 0-3 in Y9, 4-7 in Y10), each widened, shifted, clamped and
// exponentiated by EXP4 with expF64's operations (VROUNDPD $0 rounds to
// even), written back times mul rounded to float32 with store.
TEXT ·expShiftAVX2(SB), NOSPLIT, $0-56
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD shift+16(FP), Y13
	VBROADCASTSD mul+24(FP), Y14
	MOVBLZX      store+32(FP), DX
	MOVQ         lanes+40(FP), DI
	MOVQ         consts+48(FP), AX
	VMOVUPD      96(AX), Y11
	VMOVUPD      128(AX), Y12
	VMOVUPD      (DI), Y9
	VMOVUPD      32(DI), Y10

exp2step:
	TESTQ     CX, CX
	JZ        exp2done
	VCVTPS2PD (SI), Y0
	EXP4
	VADDPD    Y2, Y9, Y9
	TESTQ     DX, DX
	JZ        exp2high
	VMULPD    Y14, Y2, Y3
	VCVTPD2PSY Y3, X3
	VMOVUPS   X3, (SI)

exp2high:
	VCVTPS2PD 16(SI), Y0
	EXP4
	VADDPD    Y2, Y10, Y10
	TESTQ     DX, DX
	JZ        exp2next
	VMULPD    Y14, Y2, Y3
	VCVTPD2PSY Y3, X3
	VMOVUPS   X3, 16(SI)

exp2next:
	ADDQ $32, SI
	SUBQ $8, CX
	JMP  exp2step

exp2done:
	VMOVUPD Y9, (DI)
	VMOVUPD Y10, 32(DI)
	VZEROUPPER
	RET

// func expSumAVX2F64(x *float64, n int, shift float64, lanes *[8]float64, consts *float64)
//
// expShiftAVX2's sum over float64 elements x[0:n], n a multiple of 8,
// without writing them.
TEXT ·expSumAVX2F64(SB), NOSPLIT, $0-40
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD shift+16(FP), Y13
	MOVQ         lanes+24(FP), DI
	MOVQ         consts+32(FP), AX
	VMOVUPD      96(AX), Y11
	VMOVUPD      128(AX), Y12
	VMOVUPD      (DI), Y9
	VMOVUPD      32(DI), Y10

exp2s64step:
	TESTQ   CX, CX
	JZ      exp2s64done
	VMOVUPD (SI), Y0
	EXP4
	VADDPD  Y2, Y9, Y9
	VMOVUPD 32(SI), Y0
	EXP4
	VADDPD  Y2, Y10, Y10
	ADDQ    $64, SI
	SUBQ    $8, CX
	JMP     exp2s64step

exp2s64done:
	VMOVUPD Y9, (DI)
	VMOVUPD Y10, 32(DI)
	VZEROUPPER
	RET
