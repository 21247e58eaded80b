//go:build amd64 && !purego

#include "textflag.h"
#include "dotfold_amd64.h"

// Masks for the last, partial group of eight float32 of the AVX2 dot
// kernels (and of A in their 16-bit twins, widedot2_amd64.h): loading 32
// bytes at offset 4·(8-r) gives r lanes of ones followed by zeros.
DATA ·sdotMask+0(SB)/4, $0xffffffff
DATA ·sdotMask+4(SB)/4, $0xffffffff
DATA ·sdotMask+8(SB)/4, $0xffffffff
DATA ·sdotMask+12(SB)/4, $0xffffffff
DATA ·sdotMask+16(SB)/4, $0xffffffff
DATA ·sdotMask+20(SB)/4, $0xffffffff
DATA ·sdotMask+24(SB)/4, $0xffffffff
DATA ·sdotMask+28(SB)/4, $0xffffffff
DATA ·sdotMask+32(SB)/4, $0
DATA ·sdotMask+36(SB)/4, $0
DATA ·sdotMask+40(SB)/4, $0
DATA ·sdotMask+44(SB)/4, $0
DATA ·sdotMask+48(SB)/4, $0
DATA ·sdotMask+52(SB)/4, $0
DATA ·sdotMask+56(SB)/4, $0
DATA ·sdotMask+60(SB)/4, $0
GLOBL ·sdotMask(SB), RODATA|NOPTR, $64

// Row r of A is at SI+r·lda (SI, R10, R11); row j of B at DI+j·ldb (DI, R12,
// R13, BX); AX is the byte offset along k. Accumulator for (r, j) is
// Y(4+4r+j): its lane l sums the products at positions ≡ l (mod 8), in order.
#define DOTSTEP(A0, A1, A2) \
	VMOVUPS     (DI)(AX*1), Y3; \
	VFMADD231PS Y3, A0, Y4;     \
	VFMADD231PS Y3, A1, Y8;     \
	VFMADD231PS Y3, A2, Y12;    \
	VMOVUPS     (R12)(AX*1), Y3; \
	VFMADD231PS Y3, A0, Y5;     \
	VFMADD231PS Y3, A1, Y9;     \
	VFMADD231PS Y3, A2, Y13;    \
	VMOVUPS     (R13)(AX*1), Y3; \
	VFMADD231PS Y3, A0, Y6;     \
	VFMADD231PS Y3, A1, Y10;    \
	VFMADD231PS Y3, A2, Y14;    \
	VMOVUPS     (BX)(AX*1), Y3; \
	VFMADD231PS Y3, A0, Y7;     \
	VFMADD231PS Y3, A1, Y11;    \
	VFMADD231PS Y3, A2, Y15

// func sdotKernel3x4(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, alpha float32, beta float32)
TEXT ·sdotKernel3x4(SB), NOSPLIT, $0-64
	MOVQ   k+0(FP), CX
	MOVQ   a+8(FP), SI
	MOVQ   lda+16(FP), R8
	SHLQ   $2, R8
	LEAQ   (SI)(R8*1), R10
	LEAQ   (R10)(R8*1), R11
	MOVQ   b+24(FP), DI
	MOVQ   ldb+32(FP), R9
	SHLQ   $2, R9
	LEAQ   (DI)(R9*1), R12
	LEAQ   (R12)(R9*1), R13
	LEAQ   (R13)(R9*1), BX
	XORQ   AX, AX
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

dot8:
	CMPQ    CX, $8
	JL      dottail
	VMOVUPS (SI)(AX*1), Y0
	VMOVUPS (R10)(AX*1), Y1
	VMOVUPS (R11)(AX*1), Y2
	DOTSTEP(Y0, Y1, Y2)
	ADDQ    $32, AX
	SUBQ    $8, CX
	JMP     dot8

dottail:
	TESTQ      CX, CX
	JZ         dotreduce
	// r = CX lanes remain: masked loads read only them and zero the rest.
	LEAQ       ·sdotMask(SB), DX
	NEGQ       CX
	LEAQ       32(DX)(CX*4), DX
	VMOVUPS    (DX), Y3
	VMASKMOVPS (SI)(AX*1), Y3, Y0
	VMASKMOVPS (R10)(AX*1), Y3, Y1
	VMASKMOVPS (R11)(AX*1), Y3, Y2
	// B rows: the mask register is reloaded before each load into it.
	VMASKMOVPS  (DI)(AX*1), Y3, Y3
	VFMADD231PS Y3, Y0, Y4
	VFMADD231PS Y3, Y1, Y8
	VFMADD231PS Y3, Y2, Y12
	VMOVUPS     (DX), Y3
	VMASKMOVPS  (R12)(AX*1), Y3, Y3
	VFMADD231PS Y3, Y0, Y5
	VFMADD231PS Y3, Y1, Y9
	VFMADD231PS Y3, Y2, Y13
	VMOVUPS     (DX), Y3
	VMASKMOVPS  (R13)(AX*1), Y3, Y3
	VFMADD231PS Y3, Y0, Y6
	VFMADD231PS Y3, Y1, Y10
	VFMADD231PS Y3, Y2, Y14
	VMOVUPS     (DX), Y3
	VMASKMOVPS  (BX)(AX*1), Y3, Y3
	VFMADD231PS Y3, Y0, Y7
	VFMADD231PS Y3, Y1, Y11
	VFMADD231PS Y3, Y2, Y15

dotreduce:
	MOVQ         c+40(FP), DX
	MOVQ         ldc+48(FP), R9
	SHLQ         $2, R9
	VBROADCASTSS alpha+56(FP), X2
	VBROADCASTSS beta+60(FP), X3
	MOVL         beta+60(FP), CX
	ANDL         $0x7fffffff, CX

	DOTREDUCE(Y4, Y5, Y6, Y7)
	VMULPS      X2, X0, X0
	TESTL       CX, CX
	JZ          dotstore0
	VFMADD231PS (DX), X3, X0
dotstore0:
	VMOVUPS     X0, (DX)
	ADDQ        R9, DX

	DOTREDUCE(Y8, Y9, Y10, Y11)
	VMULPS      X2, X0, X0
	TESTL       CX, CX
	JZ          dotstore1
	VFMADD231PS (DX), X3, X0
dotstore1:
	VMOVUPS     X0, (DX)
	ADDQ        R9, DX

	DOTREDUCE(Y12, Y13, Y14, Y15)
	VMULPS      X2, X0, X0
	TESTL       CX, CX
	JZ          dotstore2
	VFMADD231PS (DX), X3, X0
dotstore2:
	VMOVUPS     X0, (DX)
	VZEROUPPER
	RET

// Masks for the last, partial group of four float64: 32 bytes at offset
// 8·(4-r) give r lanes of ones followed by zeros.
DATA ddotMask<>+0(SB)/8, $0xffffffffffffffff
DATA ddotMask<>+8(SB)/8, $0xffffffffffffffff
DATA ddotMask<>+16(SB)/8, $0xffffffffffffffff
DATA ddotMask<>+24(SB)/8, $0xffffffffffffffff
DATA ddotMask<>+32(SB)/8, $0
DATA ddotMask<>+40(SB)/8, $0
DATA ddotMask<>+48(SB)/8, $0
DATA ddotMask<>+56(SB)/8, $0
GLOBL ddotMask<>(SB), RODATA|NOPTR, $64

#define DDOTSTEP(A0, A1, A2) \
	VMOVUPD     (DI)(AX*1), Y3; \
	VFMADD231PD Y3, A0, Y4;     \
	VFMADD231PD Y3, A1, Y8;     \
	VFMADD231PD Y3, A2, Y12;    \
	VMOVUPD     (R12)(AX*1), Y3; \
	VFMADD231PD Y3, A0, Y5;     \
	VFMADD231PD Y3, A1, Y9;     \
	VFMADD231PD Y3, A2, Y13;    \
	VMOVUPD     (R13)(AX*1), Y3; \
	VFMADD231PD Y3, A0, Y6;     \
	VFMADD231PD Y3, A1, Y10;    \
	VFMADD231PD Y3, A2, Y14;    \
	VMOVUPD     (BX)(AX*1), Y3; \
	VFMADD231PD Y3, A0, Y7;     \
	VFMADD231PD Y3, A1, Y11;    \
	VFMADD231PD Y3, A2, Y15

// Reduce the four accumulators of one row to Y0 = (Σ acc0, …, Σ acc3):
// pairs within each 128-bit half, then the two halves of each pair.
#define DDOTREDUCE(R0, R1, R2, R3) \
	VHADDPD    R1, R0, Y0;      \
	VHADDPD    R3, R2, Y1;      \
	VPERM2F128 $0x20, Y1, Y0, Y2; \
	VPERM2F128 $0x31, Y1, Y0, Y3; \
	VADDPD     Y3, Y2, Y0

// func ddotKernel3x4(k int, a *float64, lda int, b *float64, ldb int, c *float64, ldc int, alpha float64, beta float64)
//
// The float64 twin of sdotKernel3x4: lanes of four, Y2 and Y3 are scratch in
// the reduction, so alpha and beta are broadcast afresh for each row.
TEXT ·ddotKernel3x4(SB), NOSPLIT, $0-72
	MOVQ   k+0(FP), CX
	MOVQ   a+8(FP), SI
	MOVQ   lda+16(FP), R8
	SHLQ   $3, R8
	LEAQ   (SI)(R8*1), R10
	LEAQ   (R10)(R8*1), R11
	MOVQ   b+24(FP), DI
	MOVQ   ldb+32(FP), R9
	SHLQ   $3, R9
	LEAQ   (DI)(R9*1), R12
	LEAQ   (R12)(R9*1), R13
	LEAQ   (R13)(R9*1), BX
	XORQ   AX, AX
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

ddot4x:
	CMPQ    CX, $4
	JL      ddottail
	VMOVUPD (SI)(AX*1), Y0
	VMOVUPD (R10)(AX*1), Y1
	VMOVUPD (R11)(AX*1), Y2
	DDOTSTEP(Y0, Y1, Y2)
	ADDQ    $32, AX
	SUBQ    $4, CX
	JMP     ddot4x

ddottail:
	TESTQ      CX, CX
	JZ         ddotreduce
	LEAQ       ddotMask<>(SB), DX
	NEGQ       CX
	LEAQ       32(DX)(CX*8), DX
	VMOVUPD    (DX), Y3
	VMASKMOVPD (SI)(AX*1), Y3, Y0
	VMASKMOVPD (R10)(AX*1), Y3, Y1
	VMASKMOVPD (R11)(AX*1), Y3, Y2
	VMASKMOVPD  (DI)(AX*1), Y3, Y3
	VFMADD231PD Y3, Y0, Y4
	VFMADD231PD Y3, Y1, Y8
	VFMADD231PD Y3, Y2, Y12
	VMOVUPD     (DX), Y3
	VMASKMOVPD  (R12)(AX*1), Y3, Y3
	VFMADD231PD Y3, Y0, Y5
	VFMADD231PD Y3, Y1, Y9
	VFMADD231PD Y3, Y2, Y13
	VMOVUPD     (DX), Y3
	VMASKMOVPD  (R13)(AX*1), Y3, Y3
	VFMADD231PD Y3, Y0, Y6
	VFMADD231PD Y3, Y1, Y10
	VFMADD231PD Y3, Y2, Y14
	VMOVUPD     (DX), Y3
	VMASKMOVPD  (BX)(AX*1), Y3, Y3
	VFMADD231PD Y3, Y0, Y7
	VFMADD231PD Y3, Y1, Y11
	VFMADD231PD Y3, Y2, Y15

ddotreduce:
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), R9
	SHLQ $3, R9
	MOVQ beta+64(FP), CX
	SHLQ $1, CX

	DDOTREDUCE(Y4, Y5, Y6, Y7)
	VBROADCASTSD alpha+56(FP), Y1
	VMULPD       Y1, Y0, Y0
	TESTQ        CX, CX
	JZ           ddotstore0
	VBROADCASTSD beta+64(FP), Y1
	VFMADD231PD  (DX), Y1, Y0
ddotstore0:
	VMOVUPD      Y0, (DX)
	ADDQ         R9, DX

	DDOTREDUCE(Y8, Y9, Y10, Y11)
	VBROADCASTSD alpha+56(FP), Y1
	VMULPD       Y1, Y0, Y0
	TESTQ        CX, CX
	JZ           ddotstore1
	VBROADCASTSD beta+64(FP), Y1
	VFMADD231PD  (DX), Y1, Y0
ddotstore1:
	VMOVUPD      Y0, (DX)
	ADDQ         R9, DX

	DDOTREDUCE(Y12, Y13, Y14, Y15)
	VBROADCASTSD alpha+56(FP), Y1
	VMULPD       Y1, Y0, Y0
	TESTQ        CX, CX
	JZ           ddotstore2
	VBROADCASTSD beta+64(FP), Y1
	VFMADD231PD  (DX), Y1, Y0
ddotstore2:
	VMOVUPD      Y0, (DX)
	VZEROUPPER
	RET

// func sdotStream2AVX2(k int, a *float32, b0 *float32, b1 *float32, rows int, ldb int, c0 *float32, c1 *float32, alpha float32, beta float32)
//
// sdotStream2AVX512's AVX2 twin: one row of A against rows consecutive
// rows from b0 and as many from b1, pairwise, so B is read as two
// sequential streams; each element exactly as sdotKernel3x4 computes it
// (lane l of 8 over the positions ≡ l (mod 8) in order, the last partial
// group under sdotMask's mask, DOTREDUCE's tree, alpha and beta as there).
// Y7 holds the mask, X2 alpha and X3 beta; AX is the byte offset along k.
TEXT ·sdotStream2AVX2(SB), NOSPLIT, $0-72
	STREAM2ARGS($2)
	MOVQ         CX, AX
	ANDQ         $7, AX
	LEAQ         ·sdotMask(SB), BX
	NEGQ         AX
	VMOVUPS      32(BX)(AX*4), Y7

s2vrow:
	TESTQ  R8, R8
	JZ     s2vdone
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	XORQ   AX, AX
	MOVQ   CX, BX

s2vloop16:
	CMPQ        BX, $16
	JL          s2vloop8
	VMOVUPS     (SI)(AX*1), Y0
	VMOVUPS     (DI)(AX*1), Y4
	VFMADD231PS Y4, Y0, Y8
	VMOVUPS     (R12)(AX*1), Y5
	VFMADD231PS Y5, Y0, Y9
	VMOVUPS     32(SI)(AX*1), Y1
	VMOVUPS     32(DI)(AX*1), Y4
	VFMADD231PS Y4, Y1, Y8
	VMOVUPS     32(R12)(AX*1), Y5
	VFMADD231PS Y5, Y1, Y9
	ADDQ        $64, AX
	SUBQ        $16, BX
	JMP         s2vloop16

s2vloop8:
	CMPQ        BX, $8
	JL          s2vtail
	VMOVUPS     (SI)(AX*1), Y0
	VMOVUPS     (DI)(AX*1), Y4
	VFMADD231PS Y4, Y0, Y8
	VMOVUPS     (R12)(AX*1), Y5
	VFMADD231PS Y5, Y0, Y9
	ADDQ        $32, AX
	SUBQ        $8, BX

s2vtail:
	TESTQ       BX, BX
	JZ          s2vreduce
	VMASKMOVPS  (SI)(AX*1), Y7, Y0
	VMASKMOVPS  (DI)(AX*1), Y7, Y4
	VFMADD231PS Y4, Y0, Y8
	VMASKMOVPS  (R12)(AX*1), Y7, Y5
	VFMADD231PS Y5, Y0, Y9

s2vreduce:
	DOTREDUCE(Y8, Y9, Y8, Y9)
	VMULPS      X2, X0, X0
	STREAM2NEXT(s2vstore, s2vrow)

s2vdone:
	VZEROUPPER
	RET
