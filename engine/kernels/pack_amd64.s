//go:build amd64 && !purego

#include "textflag.h"

// func copyRowsAVX(dst unsafe.Pointer, src unsafe.Pointer, srcStride int, rowBytes int, rows int)
//
// Copies rows of rowBytes bytes (24, 48 or 96: one row of a packed A panel)
// from src, rows srcStride bytes apart, to dst, rows back to back. Used to
// pack a transposed A. Other widths are not handled (the caller checks).
TEXT ·copyRowsAVX(SB), NOSPLIT, $0-40
	MOVQ  dst+0(FP), DI
	MOVQ  src+8(FP), SI
	MOVQ  srcStride+16(FP), R8
	MOVQ  rowBytes+24(FP), R9
	MOVQ  rows+32(FP), CX
	TESTQ CX, CX
	JZ    done
	CMPQ  R9, $24
	JEQ   rows24
	CMPQ  R9, $48
	JEQ   rows48
	CMPQ  R9, $96
	JEQ   rows96
	JMP   done

rows24:
	VMOVUPS (SI), X0
	MOVQ    16(SI), AX
	VMOVUPS X0, (DI)
	MOVQ    AX, 16(DI)
	ADDQ    R8, SI
	ADDQ    $24, DI
	DECQ    CX
	JNZ     rows24
	JMP     done

rows48:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), X1
	VMOVUPS Y0, (DI)
	VMOVUPS X1, 32(DI)
	ADDQ    R8, SI
	ADDQ    $48, DI
	DECQ    CX
	JNZ     rows48
	JMP     done

rows96:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	ADDQ    R8, SI
	ADDQ    $96, DI
	DECQ    CX
	JNZ     rows96

done:
	VZEROUPPER
	RET

// func transpose8x8Blocks(dst *float32, dstStride int, src *float32, srcStride int, jBlocks int, pBlocks int)
//
// Transposes a jBlocks·8 × pBlocks·8 block of float32: element (j, p) at
// src + j·srcStride + 4p goes to dst + p·dstStride + 4j (strides in bytes).
// Packs a transposed B into panels. Each 8×8 block: rows in Y0..Y7, pairs
// interleaved (VUNPCKLPS/VUNPCKHPS) into Y8..Y15, quadruples gathered
// (VSHUFPS) into Y0..Y7, halves exchanged (VPERM2F128) into the eight
// columns, Y8..Y15.
TEXT ·transpose8x8Blocks(SB), NOSPLIT, $0-48
	MOVQ  dst+0(FP), DI
	MOVQ  dstStride+8(FP), R10
	MOVQ  src+16(FP), SI
	MOVQ  srcStride+24(FP), R8
	MOVQ  jBlocks+32(FP), DX
	LEAQ  (R8)(R8*2), R9
	LEAQ  (R10)(R10*2), R11
	TESTQ DX, DX
	JZ    tdone
	CMPQ  pBlocks+40(FP), $0
	JEQ   tdone

tjloop:
	MOVQ SI, AX
	MOVQ DI, R12
	MOVQ pBlocks+40(FP), CX

tploop:
	LEAQ    (AX)(R8*4), BX
	VMOVUPS (AX), Y0
	VMOVUPS (AX)(R8*1), Y1
	VMOVUPS (AX)(R8*2), Y2
	VMOVUPS (AX)(R9*1), Y3
	VMOVUPS (BX), Y4
	VMOVUPS (BX)(R8*1), Y5
	VMOVUPS (BX)(R8*2), Y6
	VMOVUPS (BX)(R9*1), Y7

	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15

	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xEE, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xEE, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xEE, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xEE, Y15, Y13, Y7

	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15

	LEAQ    (R12)(R10*4), R13
	VMOVUPS Y8, (R12)
	VMOVUPS Y9, (R12)(R10*1)
	VMOVUPS Y10, (R12)(R10*2)
	VMOVUPS Y11, (R12)(R11*1)
	VMOVUPS Y12, (R13)
	VMOVUPS Y13, (R13)(R10*1)
	VMOVUPS Y14, (R13)(R10*2)
	VMOVUPS Y15, (R13)(R11*1)

	ADDQ $32, AX
	LEAQ (R12)(R10*8), R12
	DECQ CX
	JNZ  tploop

	LEAQ (SI)(R8*8), SI
	ADDQ $32, DI
	DECQ DX
	JNZ  tjloop

tdone:
	VZEROUPPER
	RET
