// Package kernels holds the dense linear-algebra kernels the embedded engine
// runs on: matrix products in float32 and float64 (Par.Sgemm, Par.Dgemm),
// products with 16-bit weights and float32 activations (Par.SgemmBF16 for
// bfloat16, Par.SgemmF16 for IEEE half precision, which computes exactly
// what Sgemm computes on the weights widened, reading 2 bytes a weight)
// and the level-1 routines Sdot, Saxpy, Ddot and Daxpy. It is pure Go plus
// Go assembly for amd64; no cgo.
//
// # Layout
//
// Matrices are row-major with BLAS's row-major conventions: Sgemm computes
// C = alpha·op(A)·op(B) + beta·C where op(X) is X or Xᵀ, op(A) is m×k, op(B)
// is k×n and C is m×n; lda, ldb and ldc are the row strides of A, B and C as
// stored (A is stored k×m when transA is set, so then lda >= m). beta == 0
// overwrites C without reading it (NaNs in C are ignored). Impossible
// arguments (a negative size, a stride shorter than its row, a slice too short
// for its matrix) panic with a message naming the argument. Slices are only
// used during the call; C must not overlap A or B.
//
// # Implementations
//
// One implementation is chosen at start-up from the CPU:
//
//   - avx512-12x32 (float64: avx512-12x16): AVX-512F micro-kernels holding a
//     12×32 tile of C in 24 ZMM registers, and a 4×4 float32 dot-product tile
//     (float64 uses the AVX2 one);
//   - avx2-6x16 (float64: avx2-6x8): AVX2+FMA micro-kernels holding a 6×16
//     tile in 12 YMM registers, and a 3×4 dot-product tile (float32: and
//     one row against two streams of B's rows, for a single row);
//   - go4x4: a portable Go micro-kernel (other architectures, the purego
//     build tag, or TANDEM_KERNELS=purego in the environment).
//
// TANDEM_KERNELS=avx2 keeps an AVX-512 machine on the AVX2 kernels, and
// TANDEM_KERNELS=avx512 keeps an AMX machine's SgemmBF16 off the tile
// unit; Implementation and BF16Implementation report the choice. Sdot, Saxpy, Ddot and Daxpy use AVX2+FMA
// assembly whenever the CPU has it.
//
// The driver around the micro-kernels follows the BLIS design. B is packed
// into panels of nr columns (kc = 256 rows each, so a panel sits in L1; a
// transposed float32 B is packed by 8×8 AVX transposes); an
// untransposed B is read in place instead when op(A) has at most 24 rows
// (packing would cost more than it saves). Rows of A are read in place
// (copied once, when they lie a multiple of 4 KiB apart and C has at least
// 256 columns, to rows a cache line further apart: a tile's rows would
// otherwise share one L1 set); a
// transposed A is packed into panels of mr rows, since walking its columns
// at stride lda would thrash a few L1 sets. Three shapes take other routes:
//
//   - A·Bᵀ with at most 24 rows (AVX-512 float32: 96), as in the sampling
//     step, runs as tiles of dot products over the contiguous rows of A and
//     B, with no packing; a single row (the 1-row decode, bound
//     by streaming B once) is computed against runs of about 1 MiB of B's
//     rows, one run a goroutine, each read as two streams (its two halves
//     side by side), every element summed exactly as the 4×4 tile sums it:
//     a tile's rows of a few KiB are streams too short for the hardware
//     prefetchers (on AMD's Zen 5 this took the 1-row product over 240 MiB
//     of bfloat16 weights from about 60 % of the read bandwidth to about
//     90 %, with the AVX-512 kernels and with their AVX2 twins alike);
//   - a transposed A with n <= 16 (float64: 8) and m >= 4n is computed as
//     Cᵀ = op(B)ᵀ·op(A)ᵀ and transposed back, so that only a few rows are
//     packed, once, instead of all of A for one or two panels;
//   - with AVX-512, other products with n <= 16 (float64: 8) use the
//     narrower AVX2 tile.
//
// # Determinism
//
// The result is bit-identical for every Par.Threads value. The output is cut
// into a fixed grid of mr×nr tiles anchored at (0, 0); work items are blocks
// of whole tiles, handed to goroutines in any order; every tile, the partial
// ones at the edges included (they run on zero-padded copies), is computed by
// the same micro-kernel, in which each element of C accumulates its products
// in its own register lane in the order p = 0, 1, …, k-1, one depth pass of
// kc = 256 at a time: C = alpha·s₀ + beta·C, then C = alpha·sᵢ + C for the
// later passes. On the dot-product route each element sums in 16 (AVX-512
// float32), 8 (AVX2 float32) or 4 (float64) lanes, each lane in order, then
// in a fixed reduction tree. Which route runs depends on the shape only.
// Results do differ, in the last bits, between implementations (AVX-512, AVX2
// and Go round differently: FMA versus separate multiply and add, lane
// counts); on one machine they are reproducible.
//
// Sdot and Ddot sum in an order fixed by the length: lane-wise partial sums,
// a fixed reduction tree, then the tail in order.
//
// # Parallelism
//
// A Par with Threads > 1 starts goroutines for one call and joins them before
// returning. It uses min(Threads, work items, m·n·k / 2²⁰) goroutines, so a
// product below about two million multiply-adds stays on the calling
// goroutine: waking a thread for a goroutine and joining it costs from one to
// tens of microseconds, 2²⁰ multiply-adds take about 16 µs on one AVX-512
// core. Work items are blocks of at most 96 rows by 256 columns of C, split
// finer (down to one tile) until each goroutine has about four to choose
// from, and handed out dynamically; how the work is split never changes a
// result. Scratch buffers come from a
// sync.Pool, and the packed copy of B is bounded (4 MiB of float32) by
// cutting large products into slabs along the tile grid and the depth passes.
// All functions are safe for concurrent use (on distinct C).
//
// # Speed
//
// GFLOP/s (2·m·n·k per second) on the engine's shapes: its default model
// (dim 128, hidden 512, vocab 98, LoRA rank 16, 2048 training rows, 8
// sequences sampled, prompts of 64 and 256 rows) and a wider one (dim 256,
// hidden 768, 4096 rows). The machine: an Intel Xeon with AVX-512 at
// 2.1 GHz, 2 vCPUs shared with other jobs (load 4 to 12 while measuring), so
// every figure is the best of 1 to 5 runs and may still be low by up to a
// factor of 2. Columns: 1t and 2t, this package (AVX-512) on 1 and 2
// goroutines by the clock, from BenchmarkSgemm with -cpu 1,2 (the second
// vCPU was never free, so 2t shows no speed-up); gonum,
// gonum.org/v1/gonum/blas/gonum on 1 thread; naive, a triple loop; avx512,
// avx2 and go, one goroutine of each implementation timed by its thread's
// CPU time (BenchmarkSgemmImpls), the fairer figure on a shared machine.
// The micro-kernels alone reach 115 (AVX-512) and 76 (AVX2) GFLOP/s on
// cache-resident panels (BenchmarkMicroKernel). "–": not run (the portable
// kernel on shapes over 2²⁶ multiply-adds, with -short).
//
//	shape                     m×n×k         op      1t    2t  gonum  naive  avx512  avx2    go
//	sample8-d128-qkv-XWt      8×128×128     A·Bᵀ    69    65     10    0.8      77    51   2.6
//	sample8-d128-up-XWt       8×512×128     A·Bᵀ    49    52    9.5    1.0      77    49   2.6
//	sample8-d128-down-XWt     8×128×512     A·Bᵀ   118   117     16    1.0     125    64   2.7
//	sample8-d256-up-XWt       8×768×256     A·Bᵀ   104    94     10    0.7     107    59   2.7
//	prefill64-d128-up-XWt     64×512×128    A·Bᵀ    88    89     13    0.9      74    54   2.0
//	prefill256-d256-up-XWt    256×768×256   A·Bᵀ   121    74    7.6    0.9      98    54   2.3
//	train2k-d128-up-XWt       2048×512×128  A·Bᵀ   132   138    7.9    0.3     139    74     –
//	train2k-d128-down-XWt     2048×128×512  A·Bᵀ    78   124    8.2    0.3     130    71     –
//	train2k-d128-unembed-XWt  2048×98×128   A·Bᵀ    98    64    6.6    0.6     106    63   3.1
//	train2k-d128-dX-GW        2048×128×512  A·B     93   135    4.3    0.3     134    74     –
//	train2k-d128-dW-GtX       512×128×2048  Aᵀ·B    86    77    4.4    0.1     109    59     –
//	train4k-d256-up-XWt       4096×768×256  A·Bᵀ    88    86    7.6    0.4     137    74     –
//	train4k-d256-up-XW        4096×768×256  A·B    102   140    7.5    0.3     134    77     –
//	train4k-d256-dX-GW        4096×256×768  A·B    106    92    6.6    0.4     129    71     –
//	train4k-d256-dW-GtX       768×256×4096  Aᵀ·B    95    57    4.1    0.1     107    56     –
//	lora16-XAt                2048×16×128   A·Bᵀ    69    62     10    0.7      74    72   3.1
//	lora16-UBt                2048×512×16   A·Bᵀ    67    83    3.3    0.9     103    51   2.1
//	lora16-GB                 2048×16×512   A·B     84    88    4.2    0.8      73    71   3.2
//	lora16-dB-GtU             512×16×2048   Aᵀ·B    60    58    3.6    0.3      83    47   2.7
//	lora16-dA-TtX             16×128×2048   Aᵀ·B    60    48    6.6    0.6      81    61   3.1
//
// To measure: go test -run - -bench 'Sgemm$|SgemmImpls' -cpu 1,2 ./engine/kernels
// (add -short to skip the slow portable and naive runs); BenchmarkSgemmTuning
// compares the blocking choices.
package kernels
