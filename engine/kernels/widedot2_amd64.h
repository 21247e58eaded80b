// widedot2_amd64.h holds the AVX2 dot kernels of the dot route with B
// stored in 16 bits (half precision in f16_amd64.s, bfloat16 in
// bf16wide_amd64.s), which include it with three macros defined:
//
//	WIDEN8(src, dst):   the 8 16-bit elements at src (a 128-bit memory
//	                    operand) widened, exactly, to the 8 float32 lanes
//	                    of Y register dst
//	W2DOT3X4,
//	W2DOTSTREAM2:         the kernels' symbol names
//
// Each kernel is the float32 kernel of dot_amd64.s (sdotKernel3x4,
// sdotStream2AVX2) with B widened as it is loaded: every accumulator
// takes the float32 kernel's products in its order, and the reduction is
// the same macro (dotfold_amd64.h's DOTREDUCE), so a tile is the float32
// tile of B widened, bit for bit. They need AVX2 and FMA (and F16C for
// halves).
//
// AVX2 has no 16-bit masked load, so the last partial group of each row
// of B (r < 8 elements) is copied to a zeroed slot on the stack and
// widened from there: its other lanes widen to +0, as the float32
// kernel's masked lanes load +0.

// WDOT3X4GROUP: one group of 8 elements of W2DOT3X4, A's three rows at OA
// bytes past SI, R10, R11 (and AX), B's four rows widened from OB bytes
// past DI, R12, R13, BX; twelve FMAs into Y4-Y15 in sdotKernel3x4's
// DOTSTEP order.
#define WDOT3X4GROUP(OA, OB) \
	VMOVUPS     OA(SI)(AX*1), Y0;  \
	VMOVUPS     OA(R10)(AX*1), Y1; \
	VMOVUPS     OA(R11)(AX*1), Y2; \
	WIDEN8(OB(DI), Y3);            \
	VFMADD231PS Y3, Y0, Y4;        \
	VFMADD231PS Y3, Y1, Y8;        \
	VFMADD231PS Y3, Y2, Y12;       \
	WIDEN8(OB(R12), Y3);           \
	VFMADD231PS Y3, Y0, Y5;        \
	VFMADD231PS Y3, Y1, Y9;        \
	VFMADD231PS Y3, Y2, Y13;       \
	WIDEN8(OB(R13), Y3);           \
	VFMADD231PS Y3, Y0, Y6;        \
	VFMADD231PS Y3, Y1, Y10;       \
	VFMADD231PS Y3, Y2, Y14;       \
	WIDEN8(OB(BX), Y3);            \
	VFMADD231PS Y3, Y0, Y7;        \
	VFMADD231PS Y3, Y1, Y11;       \
	VFMADD231PS Y3, Y2, Y15

// func W2DOT3X4(k int, a *float32, lda int, b *uint16, ldb int, c *float32, ldc int, alpha float32, beta float32)
//
// sdotKernel3x4 with B in 16 bits: B's row pointers DI, R12, R13, BX move
// 16 bytes per 8 elements, A's rows are read at the byte offset AX. The
// frame holds the four rows' last partial groups (16 bytes each).
TEXT W2DOT3X4(SB), NOSPLIT, $64-64
	MOVQ   k+0(FP), CX
	MOVQ   a+8(FP), SI
	MOVQ   lda+16(FP), R8
	SHLQ   $2, R8
	LEAQ   (SI)(R8*1), R10
	LEAQ   (R10)(R8*1), R11
	MOVQ   b+24(FP), DI
	MOVQ   ldb+32(FP), R9
	SHLQ   $1, R9
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

wdot16:
	CMPQ CX, $16
	JL   wdot8
	WDOT3X4GROUP(0, 0)
	WDOT3X4GROUP(32, 16)
	ADDQ $64, AX
	ADDQ $32, DI
	ADDQ $32, R12
	ADDQ $32, R13
	ADDQ $32, BX
	SUBQ $16, CX
	JMP  wdot16

wdot8:
	CMPQ CX, $8
	JL   wdottail
	WDOT3X4GROUP(0, 0)
	ADDQ $32, AX
	ADDQ $16, DI
	ADDQ $16, R12
	ADDQ $16, R13
	ADDQ $16, BX
	SUBQ $8, CX

wdottail:
	TESTQ   CX, CX
	JZ      wdotreduce
	// r = CX elements remain in each row: copy them to zeroed slots.
	VXORPS  Y0, Y0, Y0
	VMOVUPS Y0, 0(SP)
	VMOVUPS Y0, 32(SP)
	XORQ    R8, R8

wdotcopy:
	MOVWLZX (DI)(R8*2), R9
	MOVW    R9, 0(SP)(R8*2)
	MOVWLZX (R12)(R8*2), R9
	MOVW    R9, 16(SP)(R8*2)
	MOVWLZX (R13)(R8*2), R9
	MOVW    R9, 32(SP)(R8*2)
	MOVWLZX (BX)(R8*2), R9
	MOVW    R9, 48(SP)(R8*2)
	INCQ    R8
	CMPQ    R8, CX
	JL      wdotcopy

	// A's rows under sdotKernel3x4's mask.
	LEAQ        ·sdotMask(SB), DX
	NEGQ        CX
	VMOVUPS     32(DX)(CX*4), Y3
	VMASKMOVPS  (SI)(AX*1), Y3, Y0
	VMASKMOVPS  (R10)(AX*1), Y3, Y1
	VMASKMOVPS  (R11)(AX*1), Y3, Y2
	WIDEN8(0(SP), Y3)
	VFMADD231PS Y3, Y0, Y4
	VFMADD231PS Y3, Y1, Y8
	VFMADD231PS Y3, Y2, Y12
	WIDEN8(16(SP), Y3)
	VFMADD231PS Y3, Y0, Y5
	VFMADD231PS Y3, Y1, Y9
	VFMADD231PS Y3, Y2, Y13
	WIDEN8(32(SP), Y3)
	VFMADD231PS Y3, Y0, Y6
	VFMADD231PS Y3, Y1, Y10
	VFMADD231PS Y3, Y2, Y14
	WIDEN8(48(SP), Y3)
	VFMADD231PS Y3, Y0, Y7
	VFMADD231PS Y3, Y1, Y11
	VFMADD231PS Y3, Y2, Y15

wdotreduce:
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
	JZ          wdotstore0
	VFMADD231PS (DX), X3, X0
wdotstore0:
	VMOVUPS     X0, (DX)
	ADDQ        R9, DX

	DOTREDUCE(Y8, Y9, Y10, Y11)
	VMULPS      X2, X0, X0
	TESTL       CX, CX
	JZ          wdotstore1
	VFMADD231PS (DX), X3, X0
wdotstore1:
	VMOVUPS     X0, (DX)
	ADDQ        R9, DX

	DOTREDUCE(Y12, Y13, Y14, Y15)
	VMULPS      X2, X0, X0
	TESTL       CX, CX
	JZ          wdotstore2
	VFMADD231PS (DX), X3, X0
wdotstore2:
	VMOVUPS     X0, (DX)
	VZEROUPPER
	RET

// func W2DOTSTREAM2(k int, a *float32, b0 *uint16, b1 *uint16, rows int, ldb int, c0 *float32, c1 *float32, alpha float32, beta float32)
//
// sdotStream2AVX2 with B in 16 bits, widened as in W2DOT3X4: one row of A
// against rows consecutive rows from b0 and as many from b1, pairwise, so
// B is read as two sequential streams; each element is the float32
// kernel's on B widened, bit for bit. R13 is the byte offset along B's
// rows (A's is twice it); the frame holds the two rows' last partial
// groups.
TEXT W2DOTSTREAM2(SB), NOSPLIT, $32-72
	STREAM2ARGS($1)
	MOVQ         CX, AX
	ANDQ         $7, AX
	LEAQ         ·sdotMask(SB), DX
	NEGQ         AX
	VMOVUPS      32(DX)(AX*4), Y7

w2vrow:
	TESTQ  R8, R8
	JZ     w2vdone
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	XORQ   R13, R13
	MOVQ   CX, BX

w2vloop16:
	CMPQ        BX, $16
	JL          w2vloop8
	VMOVUPS     (SI)(R13*2), Y0
	WIDEN8((DI)(R13*1), Y4)
	VFMADD231PS Y4, Y0, Y8
	WIDEN8((R12)(R13*1), Y5)
	VFMADD231PS Y5, Y0, Y9
	VMOVUPS     32(SI)(R13*2), Y1
	WIDEN8(16(DI)(R13*1), Y4)
	VFMADD231PS Y4, Y1, Y8
	WIDEN8(16(R12)(R13*1), Y5)
	VFMADD231PS Y5, Y1, Y9
	ADDQ        $32, R13
	SUBQ        $16, BX
	JMP         w2vloop16

w2vloop8:
	CMPQ        BX, $8
	JL          w2vtail
	VMOVUPS     (SI)(R13*2), Y0
	WIDEN8((DI)(R13*1), Y4)
	VFMADD231PS Y4, Y0, Y8
	WIDEN8((R12)(R13*1), Y5)
	VFMADD231PS Y5, Y0, Y9
	ADDQ        $16, R13
	SUBQ        $8, BX

w2vtail:
	TESTQ   BX, BX
	JZ      w2vreduce
	VXORPS  Y0, Y0, Y0
	VMOVUPS Y0, 0(SP)
	ADDQ    R13, DI
	ADDQ    R13, R12
	XORQ    AX, AX

w2vcopy:
	MOVWLZX (DI)(AX*2), DX
	MOVW    DX, 0(SP)(AX*2)
	MOVWLZX (R12)(AX*2), DX
	MOVW    DX, 16(SP)(AX*2)
	INCQ    AX
	CMPQ    AX, BX
	JL      w2vcopy

	SUBQ        R13, DI
	SUBQ        R13, R12
	VMASKMOVPS  (SI)(R13*2), Y7, Y0
	WIDEN8(0(SP), Y4)
	VFMADD231PS Y4, Y0, Y8
	WIDEN8(16(SP), Y5)
	VFMADD231PS Y5, Y0, Y9

w2vreduce:
	DOTREDUCE(Y8, Y9, Y8, Y9)
	VMULPS      X2, X0, X0
	STREAM2NEXT(w2vstore, w2vrow)

w2vdone:
	VZEROUPPER
	RET
