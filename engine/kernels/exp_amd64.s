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
