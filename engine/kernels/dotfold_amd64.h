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
