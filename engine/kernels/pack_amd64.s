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
