//go:build amd64 && !purego

#include "textflag.h"

// The Go assembler has no AMX mnemonics, so the tile instructions are
// written as their VEX bytes, each line commented with the instruction in
// Intel operand order (destination first); TestAMXEncodings re-encodes
// every such comment and checks the bytes.

// func amxTiles32(cfg *byte, ks int, a *BF16, lda int, b *BF16, pairs int, s *float32)
//
// Raw sums of 32 rows of A against `pairs` panels of 32 columns of B
// (AMX-BF16), over ks steps of 32 depth elements:
//
//   - the tile configuration at cfg gives tiles 0-7 16 rows of 64 bytes;
//   - A is a block of 64 bfloat16 rows of lda elements: the hi parts of
//     rows 0-15, their lo parts, then the hi and lo parts of rows 16-31
//     (SI, DX, R8, R9), each step loading 16 rows × 32 elements of them;
//   - a panel of B holds ks·16 rows of 128 bytes, row q the 32 columns'
//     dword pairs (depth 2q, 2q+1), panel after panel; a step loads its
//     16 rows as two tiles, columns 0-15 (tmm6) and 16-31 (tmm7);
//   - tiles 0-3 hold the sums of rows 0-15 and 16-31 by columns 0-15 and
//     16-31; every step adds hi·B, then lo·B (TDPBF16PS: pairs of bfloat16
//     products accumulated in float32);
//   - panel p's 32×32 sums go to s at columns 32p, rows at stride
//     128·pairs bytes (R11); R10 and R12 point at its rows 0 and 16.
//
// The tiles are configured and released within the call: no tile state
// outlives it.
TEXT ·amxTiles32(SB), NOSPLIT, $0-56
	MOVQ cfg+0(FP), DI
	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x07 // LDTILECFG [RDI]
	MOVQ lda+24(FP), AX
	SHLQ $1, AX
	MOVQ $128, BX
	MOVQ pairs+40(FP), R13
	MOVQ R13, R11
	SHLQ $7, R11
	MOVQ s+48(FP), R10
	MOVQ R11, R12
	SHLQ $4, R12
	ADDQ R10, R12
	MOVQ b+32(FP), DI

panel:
	MOVQ a+16(FP), SI
	MOVQ AX, DX
	SHLQ $4, DX
	LEAQ (SI)(DX*1), R8
	LEAQ (R8)(DX*1), R9
	LEAQ (R9)(DX*1), CX
	MOVQ R8, DX
	MOVQ R9, R8
	MOVQ CX, R9
	MOVQ ks+8(FP), CX
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0 // TILEZERO TMM0
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc8 // TILEZERO TMM1
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd0 // TILEZERO TMM2
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8 // TILEZERO TMM3

step:
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x34; BYTE $0x1f            // TILELOADD TMM6, [RDI+RBX*1]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x7c; BYTE $0x1f; BYTE $0x40 // TILELOADD TMM7, [RDI+RBX*1+64]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x06            // TILELOADD TMM4, [RSI+RAX*1]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xc4                        // TDPBF16PS TMM0, TMM4, TMM6
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xcc                        // TDPBF16PS TMM1, TMM4, TMM7
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x02            // TILELOADD TMM5, [RDX+RAX*1]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xc5                        // TDPBF16PS TMM0, TMM5, TMM6
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xcd                        // TDPBF16PS TMM1, TMM5, TMM7
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x00            // TILELOADD TMM4, [R8+RAX*1]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xd4                        // TDPBF16PS TMM2, TMM4, TMM6
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xdc                        // TDPBF16PS TMM3, TMM4, TMM7
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x01            // TILELOADD TMM5, [R9+RAX*1]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xd5                        // TDPBF16PS TMM2, TMM5, TMM6
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xdd                        // TDPBF16PS TMM3, TMM5, TMM7
	ADDQ $64, SI
	ADDQ $64, DX
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $2048, DI
	DECQ CX
	JNZ  step

	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x1a            // TILESTORED [R10+R11*1], TMM0
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x4c; BYTE $0x1a; BYTE $0x40 // TILESTORED [R10+R11*1+64], TMM1
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x14; BYTE $0x1c            // TILESTORED [R12+R11*1], TMM2
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x5c; BYTE $0x1c; BYTE $0x40 // TILESTORED [R12+R11*1+64], TMM3
	ADDQ $128, R10
	ADDQ $128, R12
	DECQ R13
	JNZ  panel

	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0 // TILERELEASE
	RET

// func amxStore(c *float32, ldc int, s *float32, lds int, rows int, cols int, alpha float32, beta float32)
//
// C = alpha·S + beta·C for rows×cols elements (AVX-512), 16 columns at a
// time and the last ones under a mask; C is not read when beta == 0.
// Each element is fma(beta, C, alpha·S), as the other kernels apply beta.
TEXT ·amxStore(SB), NOSPLIT, $0-56
	MOVQ         c+0(FP), DI
	MOVQ         ldc+8(FP), R8
	SHLQ         $2, R8
	MOVQ         s+16(FP), SI
	MOVQ         lds+24(FP), R9
	SHLQ         $2, R9
	MOVQ         rows+32(FP), R10
	MOVQ         cols+40(FP), R11
	VBROADCASTSS alpha+48(FP), Z30
	VBROADCASTSS beta+52(FP), Z31
	MOVL         beta+52(FP), DX
	ANDL         $0x7fffffff, DX // beta == ±0
	MOVQ         R11, CX
	ANDQ         $15, CX
	MOVL         $1, AX
	SHLL         CX, AX
	DECL         AX
	KMOVW        AX, K1
	SHRQ         $4, R11

row:
	XORQ AX, AX
	MOVQ R11, CX
	TESTQ CX, CX
	JZ   tail

full:
	VMULPS (SI)(AX*4), Z30, Z0
	TESTL  DX, DX
	JZ     put
	VFMADD231PS (DI)(AX*4), Z31, Z0

put:
	VMOVUPS Z0, (DI)(AX*4)
	ADDQ    $16, AX
	DECQ    CX
	JNZ     full

tail:
	KORTESTW K1, K1
	JZ       next
	VMOVUPS.Z (SI)(AX*4), K1, Z0
	VMULPS    Z0, Z30, Z0
	TESTL     DX, DX
	JZ        puttail
	VMOVUPS.Z (DI)(AX*4), K1, Z1
	VFMADD231PS Z1, Z31, Z0

puttail:
	VMOVUPS Z0, K1, (DI)(AX*4)

next:
	ADDQ R8, DI
	ADDQ R9, SI
	DECQ R10
	JNZ  row
	VZEROUPPER
	RET

// func amxDot32(cfg *byte, ks int, w *BF16, ldw int, x *BF16, blocks int, s *float32)
//
// Raw sums of `blocks` blocks of 32 rows of W (stored n×k, read in place)
// against up to 16 rows of A (AMX-BF16), over ks steps of 32 depth
// elements: the sampling step's products, Cᵀ = W·Aᵀ.
//
//   - the tile configuration at cfg gives tiles 0-7 16 rows of 64 bytes;
//   - W's rows are at stride ldw elements; a step loads rows 0-15 and
//     16-31 of the block (R8, R9), 32 elements each, as tiles 4 and 5;
//   - x holds A's hi parts, then its lo parts, each ks tiles of 1 KiB:
//     row q of step i's tile holds, per row t of A, the dword pair of
//     depth elements 32i+2q, 32i+2q+1 (SI, DX), loaded as tiles 6 and 7;
//   - tiles 0 and 1 sum W's rows 0-15 and 16-31 by A's hi parts, tiles 2
//     and 3 by its lo parts (four chains, so that the tile unit does not
//     wait on one accumulator), step after step;
//   - block b's sums go to s at 4 KiB per block, the four tiles in order,
//     each row of a tile (a row of W) 16 floats (R10, R11, R12, R14).
//
// The tiles are configured and released within the call.
TEXT ·amxDot32(SB), NOSPLIT, $0-56
	MOVQ cfg+0(FP), DI
	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x07 // LDTILECFG [RDI]
	MOVQ ldw+24(FP), AX
	SHLQ $1, AX
	MOVQ $64, BX
	MOVQ w+16(FP), DI
	MOVQ blocks+40(FP), R13
	MOVQ s+48(FP), R10
	LEAQ 1024(R10), R11
	LEAQ 2048(R10), R12
	LEAQ 3072(R10), R14

block:
	MOVQ DI, R8
	MOVQ AX, CX
	SHLQ $4, CX
	LEAQ (DI)(CX*1), R9
	MOVQ x+32(FP), SI
	MOVQ ks+8(FP), CX
	MOVQ CX, DX
	SHLQ $10, DX // bytes of A's hi parts
	ADDQ SI, DX
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0 // TILEZERO TMM0
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc8 // TILEZERO TMM1
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd0 // TILEZERO TMM2
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8 // TILEZERO TMM3

dstep:
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x00 // TILELOADD TMM4, [R8+RAX*1]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x34; BYTE $0x1e // TILELOADD TMM6, [RSI+RBX*1]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xc4             // TDPBF16PS TMM0, TMM4, TMM6
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x01 // TILELOADD TMM5, [R9+RAX*1]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xcd             // TDPBF16PS TMM1, TMM5, TMM6
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x3c; BYTE $0x1a // TILELOADD TMM7, [RDX+RBX*1]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xd4             // TDPBF16PS TMM2, TMM4, TMM7
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xdd             // TDPBF16PS TMM3, TMM5, TMM7
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $1024, SI
	ADDQ $1024, DX
	DECQ CX
	JNZ  dstep

	BYTE $0xc4; BYTE $0xc2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x1a // TILESTORED [R10+RBX*1], TMM0
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7a; BYTE $0x4b; BYTE $0x0c; BYTE $0x1b // TILESTORED [R11+RBX*1], TMM1
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7a; BYTE $0x4b; BYTE $0x14; BYTE $0x1c // TILESTORED [R12+RBX*1], TMM2
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7a; BYTE $0x4b; BYTE $0x1c; BYTE $0x1e // TILESTORED [R14+RBX*1], TMM3
	ADDQ $4096, R10
	ADDQ $4096, R11
	ADDQ $4096, R12
	ADDQ $4096, R14
	MOVQ AX, CX
	SHLQ $5, CX
	ADDQ CX, DI
	DECQ R13
	JNZ  block

	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0 // TILERELEASE
	RET

// func amxDot32n(cfg *byte, ks int, w *BF16, ldw int, x *BF16, blocks int, s *float32)
//
// amxDot32 for at most 8 rows of A: one tile of x per step holds, per
// pair of depth elements, the hi parts' dword pairs of A's rows in
// columns 0-7 and their lo parts' in columns 8-15 (SI), so two tiles of
// sums (W's rows 0-15 and 16-31 by those 16 columns) take the place of
// four, each column summed as amxDot32 sums it. Block b's sums go to s at
// 2 KiB per block (R10, R11).
TEXT ·amxDot32n(SB), NOSPLIT, $0-56
	MOVQ cfg+0(FP), DI
	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x07 // LDTILECFG [RDI]
	MOVQ ldw+24(FP), AX
	SHLQ $1, AX
	MOVQ $64, BX
	MOVQ w+16(FP), DI
	MOVQ blocks+40(FP), R13
	MOVQ s+48(FP), R10

nblock:
	MOVQ DI, R8
	MOVQ AX, CX
	SHLQ $4, CX
	LEAQ (DI)(CX*1), R9
	MOVQ x+32(FP), SI
	MOVQ ks+8(FP), CX
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0 // TILEZERO TMM0
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc8 // TILEZERO TMM1

nstep:
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x00 // TILELOADD TMM4, [R8+RAX*1]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x34; BYTE $0x1e // TILELOADD TMM6, [RSI+RBX*1]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xc4             // TDPBF16PS TMM0, TMM4, TMM6
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x01 // TILELOADD TMM5, [R9+RAX*1]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xcd             // TDPBF16PS TMM1, TMM5, TMM6
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $1024, SI
	DECQ CX
	JNZ  nstep

	LEAQ 1024(R10), R11
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x1a // TILESTORED [R10+RBX*1], TMM0
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7a; BYTE $0x4b; BYTE $0x0c; BYTE $0x1b // TILESTORED [R11+RBX*1], TMM1
	ADDQ $2048, R10
	MOVQ AX, CX
	SHLQ $5, CX
	ADDQ CX, DI
	DECQ R13
	JNZ  nblock

	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0 // TILERELEASE
	RET

// gatherIdx is 0, 16, …, 240: the float offsets of a column of a 16×16
// tile of sums.
DATA gatherIdx<>+0(SB)/4, $0
DATA gatherIdx<>+4(SB)/4, $16
DATA gatherIdx<>+8(SB)/4, $32
DATA gatherIdx<>+12(SB)/4, $48
DATA gatherIdx<>+16(SB)/4, $64
DATA gatherIdx<>+20(SB)/4, $80
DATA gatherIdx<>+24(SB)/4, $96
DATA gatherIdx<>+28(SB)/4, $112
DATA gatherIdx<>+32(SB)/4, $128
DATA gatherIdx<>+36(SB)/4, $144
DATA gatherIdx<>+40(SB)/4, $160
DATA gatherIdx<>+44(SB)/4, $176
DATA gatherIdx<>+48(SB)/4, $192
DATA gatherIdx<>+52(SB)/4, $208
DATA gatherIdx<>+56(SB)/4, $224
DATA gatherIdx<>+60(SB)/4, $240
GLOBL gatherIdx<>(SB), RODATA|NOPTR, $64

// func amxDotStore(c *float32, ldc int, s *float32, lo int, rows int, cols int, alpha float32, beta float32)
//
// C = alpha·Sᵀ + beta·C for one block of amxDot32's or amxDot32n's sums
// (AVX-512): row t of C, columns 0-15 and 16-31, is column t of the
// block's first and second 16×16 tiles of hi sums, gathered, plus the
// same of its lo sums, lo floats further on (SI, R11); cols (1-32) of each of the rows rows, the last ones
// under a mask. Each element is fma(beta, C, alpha·S); C is not read when
// beta == 0.
TEXT ·amxDotStore(SB), NOSPLIT, $0-56
	MOVQ         c+0(FP), DI
	MOVQ         ldc+8(FP), R8
	SHLQ         $2, R8
	MOVQ         s+16(FP), SI
	MOVQ         lo+24(FP), R11
	LEAQ         (SI)(R11*4), R11
	MOVQ         rows+32(FP), R10
	MOVQ         cols+40(FP), CX
	VBROADCASTSS alpha+48(FP), Z30
	VBROADCASTSS beta+52(FP), Z31
	MOVL         beta+52(FP), DX
	ANDL         $0x7fffffff, DX // beta == ±0
	VMOVDQU32    gatherIdx<>(SB), Z29
	// K3: columns 0-15 in use; K4: columns 16-31.
	MOVL $-1, AX
	MOVL $1, R9
	CMPQ CX, $16
	JAE  lowfull
	SHLL CX, R9
	DECL R9
	MOVL R9, AX

lowfull:
	KMOVW AX, K3
	XORL  AX, AX
	SUBQ  $16, CX
	JLE   highset
	MOVL  $1, AX
	SHLL  CX, AX
	DECL  AX

highset:
	KMOVW AX, K4

drow:
	KMOVW       K3, K1
	VXORPS      Z0, Z0, Z0
	VGATHERDPS  (SI)(Z29*4), K1, Z0
	KMOVW       K3, K1
	VXORPS      Z2, Z2, Z2
	VGATHERDPS  (R11)(Z29*4), K1, Z2
	VADDPS      Z2, Z0, Z0
	VMULPS      Z0, Z30, Z0
	TESTL       DX, DX
	JZ          dputlow
	VMOVUPS.Z   (DI), K3, Z1
	VFMADD231PS Z1, Z31, Z0

dputlow:
	VMOVUPS Z0, K3, (DI)
	KORTESTW K4, K4
	JZ       dnext
	KMOVW       K4, K1
	VXORPS      Z0, Z0, Z0
	VGATHERDPS  1024(SI)(Z29*4), K1, Z0
	KMOVW       K4, K1
	VXORPS      Z2, Z2, Z2
	VGATHERDPS  1024(R11)(Z29*4), K1, Z2
	VADDPS      Z2, Z0, Z0
	VMULPS      Z0, Z30, Z0
	TESTL       DX, DX
	JZ          dputhigh
	VMOVUPS.Z   64(DI), K4, Z1
	VFMADD231PS Z1, Z31, Z0

dputhigh:
	VMOVUPS Z0, K4, 64(DI)

dnext:
	ADDQ $4, SI
	ADDQ $4, R11
	ADDQ R8, DI
	DECQ R10
	JNZ  drow
	VZEROUPPER
	RET
