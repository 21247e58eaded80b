// FOLD4 reduces four accumulators of 16 float32 lanes each (A, B, C, D:
// the dot products of one row of A with four rows of B) to X0 = alpha ·
// their four sums, alpha in X2's lanes: each folded to 8 lanes (low half
// plus high half), then pairwise within 128-bit halves, then the two
// halves. The float32 dot kernels (dot512_amd64.s) and their F16 twins
// (f16_amd64.s) share it, so both sum in this one order. Clobbers
// Z0-Z1 and Z4-Z7.
#define FOLD4(A, B, C, D) \
	VEXTRACTF64X4 $1, A, Y4; \
	VADDPS Z4, A, Z4;        \
	VEXTRACTF64X4 $1, B, Y5; \
	VADDPS Z5, B, Z5;        \
	VEXTRACTF64X4 $1, C, Y6; \
	VADDPS Z6, C, Z6;        \
	VEXTRACTF64X4 $1, D, Y7; \
	VADDPS Z7, D, Z7;        \
	VHADDPS Y5, Y4, Y0;      \
	VHADDPS Y7, Y6, Y1;      \
	VHADDPS Y1, Y0, Y0;      \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS X1, X0, X0;       \
	VMULPS X2, X0, X0

// DOTREDUCE reduces the four accumulators of 8 float32 lanes of one row
// of the AVX2 dot kernels (dot_amd64.s, and their 16-bit twins in
// widedot2_amd64.h) to X0 = (Σ acc0, Σ acc1, Σ acc2, Σ acc3): pairwise
// within each 128-bit half, then the two halves. Clobbers Y0-Y1.
#define DOTREDUCE(R0, R1, R2, R3) \
	VHADDPS      R1, R0, Y0; \
	VHADDPS      R3, R2, Y1; \
	VHADDPS      Y1, Y0, Y0; \
	VEXTRACTF128 $1, Y0, X1; \
	VADDPS       X1, X0, X0

// STREAM2ARGS loads the two-stream kernels' arguments: k in CX, a in SI,
// b0 in DI, b1 in R12, rows in R8, ldb in bytes (ldb << SHIFT) in R9, c0
// in R10, c1 in R11, alpha in X2's lanes and beta in X3's.
#define STREAM2ARGS(SHIFT) \
	MOVQ         k+0(FP), CX;       \
	MOVQ         a+8(FP), SI;       \
	MOVQ         b0+16(FP), DI;     \
	MOVQ         b1+24(FP), R12;    \
	MOVQ         rows+32(FP), R8;   \
	MOVQ         ldb+40(FP), R9;    \
	SHLQ         SHIFT, R9;         \
	MOVQ         c0+48(FP), R10;    \
	MOVQ         c1+56(FP), R11;    \
	VBROADCASTSS alpha+64(FP), X2;  \
	VBROADCASTSS beta+68(FP), X3

// STREAM2NEXT ends one row of the two-stream kernels (sdotStream2AVX512,
// sdotStream2AVX2 and their twins, all with the same arguments): X0 holds
// alpha times the two sums, the first run's in lane 0 and the second's in
// lane 1; beta·C is added by a fused multiply-add unless beta is ±0 (C is
// then not read), both results are stored at R10 and R11, those move on
// one element and B's row pointers DI and R12 one row (R9 bytes), one
// fewer row is left (R8) and the kernel goes on at ROW. SKIP is a label
// of the kernel's own. Clobbers X1 and DX.
#define STREAM2NEXT(SKIP, ROW) \
	VMOVSHDUP   X0, X1;          \
	MOVL        beta+68(FP), DX; \
	ANDL        $0x7fffffff, DX; \
	JZ          SKIP;            \
	VFMADD231SS (R10), X3, X0;   \
	VFMADD231SS (R11), X3, X1;   \
SKIP:                            \
	VMOVSS      X0, (R10);       \
	VMOVSS      X1, (R11);       \
	ADDQ        $4, R10;         \
	ADDQ        $4, R11;         \
	ADDQ        R9, DI;          \
	ADDQ        R9, R12;         \
	DECQ        R8;              \
	JMP         ROW
