//go:build amd64 && !purego

#include "textflag.h"
#include "dotfold_amd64.h"

// The dot kernels with B in bfloat16: a bfloat16 is the upper half of its
// float32, so VPMOVZXWD puts each one in the low half of a lane and
// VPSLLD moves it up, exactly.
#define WIDEN16(src, dst) VPMOVZXWD src, dst; VPSLLD $16, dst, dst
#define WDOT4X4 ·bwdotKernel4x4AVX512
#define WDOTSTREAM2 ·bwdotStream2AVX512
#include "widedot_amd64.h"

// The AVX2 twins of sdotKernel3x4 and sdotStream2AVX2.
#define WIDEN8(src, dst) VPMOVZXWD src, dst; VPSLLD $16, dst, dst
#define W2DOT3X4 ·bwdotKernel3x4AVX2
#define W2DOTSTREAM2 ·bwdotStream2AVX2
#include "widedot2_amd64.h"
