package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oddSizes are sizes that are multiples of no tile dimension.
var oddSizes = []int{1, 3, 7, 17, 33, 65, 129}

// testShapes covers every transpose pair with odd sizes in each position,
// sizes past one depth pass (kc = 256) and past one work item (mc rows,
// chunk·nr columns), and padded strides.
func testShapes() []shape {
	var out []shape
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			for i, s := range oddSizes {
				o := oddSizes[(i+3)%len(oddSizes)]
				out = append(out,
					shape{tA: tA, tB: tB, m: s, n: 17, k: 33},
					shape{tA: tA, tB: tB, m: 33, n: s, k: 17, padA: 1, padB: 5, padC: 2},
					shape{tA: tA, tB: tB, m: 7, n: 33, k: s, padA: 3},
					shape{tA: tA, tB: tB, m: s, n: o, k: s, padB: 1, padC: 7},
				)
			}
			out = append(out,
				shape{tA: tA, tB: tB, m: 8, n: 300, k: 130, padA: 2, padC: 1},  // sampling-like, no B packing
				shape{tA: tA, tB: tB, m: 140, n: 70, k: 513, padB: 3},          // three depth passes
				shape{tA: tA, tB: tB, m: 130, n: 290, k: 20, padA: 1, padC: 3}, // several work items
				shape{tA: tA, tB: tB, m: 2, n: 3, k: 5000, padB: 1},            // many passes
				shape{tA: tA, tB: tB, m: 3, n: 2000, k: 5, padA: 1},            // wide and shallow
			)
		}
	}
	return out
}

// alphaBetas are the scalar cases: plain product, scaled, accumulate, general,
// and alpha == 0 (C scaled only).
var alphaBetas = [][2]float64{{1, 0}, {-0.5, 0}, {1, 1}, {1.5, -0.25}, {0, 0.5}, {0, 0}}

func TestSgemmAgainstReference(t *testing.T) {
	t.Parallel()
	testGemmShapes(t, sgemmImpls(), testShapes(), 2)
}

func TestDgemmAgainstReference(t *testing.T) {
	t.Parallel()
	testGemmShapes(t, dgemmImpls(), testShapes(), 3)
}

// testGemmShapes runs every implementation on every shape against the
// float64 reference, with the scalar cases taken in turn.
func testGemmShapes[T float](t *testing.T, impls []*gemmImpl[T], shapes []shape, seed uint64) {
	rng := rand.New(rand.NewPCG(1, seed))
	for si, s := range shapes {
		o := newOperands[T](rng, s)
		ab := alphaBetas[si%len(alphaBetas)]
		alpha, beta := T(ab[0]), T(ab[1])
		if beta == 0 {
			// beta == 0 must ignore C entirely, NaNs included.
			for i := range s.m {
				for j := range s.n {
					o.c[i*o.ldc+j] = T(math.NaN())
				}
			}
		}
		want, scale := o.reference(alpha, beta)
		for _, im := range impls {
			got := slices.Clone(o.c)
			gemm(im, Par{Threads: 2}, s.tA, s.tB, s.m, s.n, s.k, alpha, o.a, o.lda, o.b, o.ldb, beta, got, o.ldc)
			requireClose(t, im.name, o, got, want, scale)
		}
	}
}

// TestGemmPaths runs every implementation with each of its path choices
// forced, on a smaller set of shapes.
func TestGemmPaths(t *testing.T) {
	t.Parallel()
	var shapes []shape
	for i, s := range testShapes() {
		if i%3 == 0 && s.m*s.n*s.k < 1<<18 {
			shapes = append(shapes, s)
		}
	}
	var s32 []*gemmImpl[float32]
	for _, base := range sgemmImpls() {
		s32 = append(s32, pathVariants(base)...)
	}
	var s64 []*gemmImpl[float64]
	for _, base := range dgemmImpls() {
		s64 = append(s64, pathVariants(base)...)
	}
	testGemmShapes(t, s32, shapes, 11)
	testGemmShapes(t, s64, shapes, 12)
}

// TestGemmAlphaBetaVariants runs every scalar case on one shape per transpose
// pair through the public entry points.
func TestGemmAlphaBetaVariants(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tA := range []bool{false, true} {
		for _, tB := range []bool{false, true} {
			for _, ab := range alphaBetas {
				s := shape{tA: tA, tB: tB, m: 19, n: 37, k: 23, padA: 1, padB: 2, padC: 3}
				o32 := newOperands[float32](rng, s)
				want, scale := o32.reference(float32(ab[0]), float32(ab[1]))
				got := slices.Clone(o32.c)
				Par{}.Sgemm(tA, tB, s.m, s.n, s.k, float32(ab[0]), o32.a, o32.lda, o32.b, o32.ldb, float32(ab[1]), got, o32.ldc)
				requireClose(t, "Sgemm", o32, got, want, scale)

				o64 := newOperands[float64](rng, s)
				want, scale = o64.reference(ab[0], ab[1])
				got64 := slices.Clone(o64.c)
				Par{Threads: 3}.Dgemm(tA, tB, s.m, s.n, s.k, ab[0], o64.a, o64.lda, o64.b, o64.ldb, ab[1], got64, o64.ldc)
				requireClose(t, "Dgemm", o64, got64, want, scale)
			}
		}
	}
}

// TestGemmDeterministicAcrossThreads checks that the thread count changes
// no bit of the result.
func TestGemmDeterministicAcrossThreads(t *testing.T) {
	t.Parallel()
	shapes := []shape{
		{m: 100, n: 150, k: 100, padA: 1},
		{tB: true, m: 8, n: 700, k: 260},
		{tA: true, m: 60, n: 100, k: 600, padC: 2}, // three depth passes
		{tA: true, tB: true, m: 257, n: 129, k: 65, padB: 3},
		{m: 400, n: 40, k: 64},
		{tA: true, m: 16, n: 128, k: 700}, // one item unless split finer
		{tB: true, m: 20, n: 130, k: 300}, // dot path
	}
	for _, im := range sgemmImpls() {
		for _, s := range shapes {
			t.Run(fmt.Sprintf("%s/%+v", im.name, s), func(t *testing.T) {
				t.Parallel()
				checkDeterministic(t, im, s, 1.5, 0.5)
			})
		}
	}
	for _, im := range dgemmImpls() {
		t.Run(im.name+"/f64", func(t *testing.T) {
			t.Parallel()
			checkDeterministic(t, im, shapes[2], -1, 0)
		})
	}
}

func checkDeterministic[T float](t *testing.T, base *gemmImpl[T], s shape, alpha, beta T) {
	im := *base
	im.minWork = 1 // every product goes parallel
	o := newOperands[T](rand.New(rand.NewPCG(uint64(s.m), uint64(s.n))), s)
	var first []T
	for _, threads := range []int{1, 2, 3, 8} {
		got := slices.Clone(o.c)
		gemm(&im, Par{Threads: threads}, s.tA, s.tB, s.m, s.n, s.k, alpha, o.a, o.lda, o.b, o.ldb, beta, got, o.ldc)
		if first == nil {
			first = got
			continue
		}
		for i := range got {
			if math.Float64bits(float64(got[i])) != math.Float64bits(float64(first[i])) && !(math.IsNaN(float64(got[i])) && math.IsNaN(float64(first[i]))) {
				require.Failf(t, "thread count changed the result", "threads=%d: element %d = %v, with 1 thread %v", threads, i, got[i], first[i])
			}
		}
	}
}

// TestGemmImplementationsAgree runs the portable and the assembly kernels on
// the same inputs; they may round differently (FMA) but stay within the
// float32 error bound of each other.
func TestGemmImplementationsAgree(t *testing.T) {
	t.Parallel()
	impls := sgemmImpls()
	if len(impls) < 2 {
		t.Skip("only the portable kernels exist on this machine")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, s := range []shape{{m: 50, n: 70, k: 300}, {tA: true, tB: true, m: 9, n: 33, k: 65, padA: 2}} {
		o := newOperands[float32](rng, s)
		_, scale := o.reference(1, 0)
		var results [][]float32
		for _, im := range impls {
			got := slices.Clone(o.c)
			gemm(im, Par{}, s.tA, s.tB, s.m, s.n, s.k, 1, o.a, o.lda, o.b, o.ldb, 0, got, o.ldc)
			results = append(results, got)
		}
		tol := 2 * float64(s.k+2) * 0x1p-24
		for i := range s.m {
			for j := range s.n {
				x, y := results[0][i*o.ldc+j], results[1][i*o.ldc+j]
				assert.LessOrEqual(t, math.Abs(float64(x-y)), tol*scale[i*s.n+j], "C[%d,%d]", i, j)
			}
		}
	}
}

func TestGemmPanicsNameTheArgument(t *testing.T) {
	t.Parallel()
	buf := make([]float32, 100)
	cases := []struct {
		name string
		call func()
		want string
	}{
		{"negative m", func() { Par{}.Sgemm(false, false, -1, 2, 2, 1, buf, 2, buf, 2, 0, buf, 2) }, "m = -1"},
		{"negative k", func() { Par{}.Sgemm(false, false, 1, 2, -2, 1, buf, 2, buf, 2, 0, buf, 2) }, "k = -2"},
		{"lda short", func() { Par{}.Sgemm(false, false, 3, 4, 5, 1, buf, 4, buf, 4, 0, buf, 4) }, "lda = 4"},
		{"lda short transposed", func() { Par{}.Sgemm(true, false, 3, 4, 5, 1, buf, 2, buf, 4, 0, buf, 4) }, "lda = 2"},
		{"ldb short transposed", func() { Par{}.Sgemm(false, true, 3, 4, 5, 1, buf, 5, buf, 4, 0, buf, 4) }, "ldb = 4"},
		{"ldc short", func() { Par{}.Sgemm(false, false, 3, 4, 5, 1, buf, 5, buf, 4, 0, buf, 3) }, "ldc = 3"},
		{"a too short", func() { Par{}.Sgemm(false, false, 30, 4, 5, 1, buf, 5, buf, 4, 0, buf, 4) }, "len(a) = 100"},
		{"b too short", func() { Par{}.Sgemm(false, true, 3, 40, 5, 1, buf, 5, buf, 5, 0, make([]float32, 200), 40) }, "len(b) = 100"},
		{"c too short", func() { Par{}.Sgemm(false, false, 3, 40, 2, 1, buf, 2, buf, 40, 0, buf[:50], 40) }, "len(c) = 50"},
		{"dgemm ldc", func() {
			Par{}.Dgemm(false, false, 1, 4, 1, 1, []float64{1}, 1, make([]float64, 4), 4, 0, make([]float64, 4), 2)
		}, "Dgemm: ldc = 2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				r := recover()
				require.NotNil(t, r, "no panic")
				assert.Contains(t, r, tc.want)
			}()
			tc.call()
		})
	}
}

// TestGemmEmpty checks the degenerate sizes: nothing to do, or only beta.
func TestGemmEmpty(t *testing.T) {
	t.Parallel()
	c := []float32{1, 2, 3, float32(math.NaN())}
	Par{}.Sgemm(false, false, 0, 2, 3, 1, nil, 3, make([]float32, 6), 2, 0, nil, 2) // m == 0: A and C may be empty
	Par{}.Sgemm(false, false, 2, 2, 0, 1, nil, 1, nil, 2, 2, c, 2)
	assert.Equal(t, []float32{2, 4, 6}, c[:3])
	assert.True(t, math.IsNaN(float64(c[3])))
	Par{}.Sgemm(false, false, 2, 2, 0, 1, nil, 1, nil, 2, 0, c, 2)
	assert.Equal(t, []float32{0, 0, 0, 0}, c)
}

// TestSlabsDoNotChangeResults checks that bounding the packed copy of B,
// which splits a product into slabs of columns and depth, changes no bit:
// slabs follow the tile grid and the depth passes.
func TestSlabsDoNotChangeResults(t *testing.T) {
	t.Parallel()
	s := shape{m: 30, n: 300, k: 600, padB: 1}
	o := newOperands[float32](rand.New(rand.NewPCG(21, 22)), s)
	for _, im := range sgemmImpls() {
		small := *im
		small.maxPackedB = 1
		want := slices.Clone(o.c)
		gemm(im, Par{Threads: 2}, s.tA, s.tB, s.m, s.n, s.k, 1, o.a, o.lda, o.b, o.ldb, 0.5, want, o.ldc)
		got := slices.Clone(o.c)
		gemm(&small, Par{Threads: 2}, s.tA, s.tB, s.m, s.n, s.k, 1, o.a, o.lda, o.b, o.ldb, 0.5, got, o.ldc)
		for i := range s.m {
			for j := range s.n {
				require.Equal(t, math.Float32bits(want[i*o.ldc+j]), math.Float32bits(got[i*o.ldc+j]), "%s: C[%d,%d]", im.name, i, j)
			}
		}
	}
}

// TestKernelsAreToldTheNextBlock checks the next block the driver hands a
// micro-kernel to ask into cache: the last two tiles against a block of
// packed B get the two halves of the block read right after it (a lone
// tile the first half), and no other tile gets anything.
func TestKernelsAreToldTheNextBlock(t *testing.T) {
	t.Parallel()
	type call struct {
		b, next  uintptr
		k, nNext int
	}
	var calls []call
	im := *goSgemm
	// One work item (every row, every panel), over several depth passes.
	im.kc, im.mc, im.chunk, im.packBMinRows, im.dot, im.narrow = 8, 16, 100, 0, nil, nil
	im.kernel = func(k int, a []float32, rsa, csa int, b []float32, ldb int, c []float32, ldc int, alpha, beta float32, next []float32) {
		cl := call{b: uintptr(unsafe.Pointer(&b[0])), k: k, nNext: len(next)}
		if len(next) > 0 {
			cl.next = uintptr(unsafe.Pointer(&next[0]))
		}
		calls = append(calls, cl)
		goKernel4x4(k, a, rsa, csa, b, ldb, c, ldc, alpha, beta, next)
	}
	// The last two shapes have one tile against each block.
	for _, s := range []shape{{m: 16, n: 40, k: 20}, {tB: true, m: 14, n: 24, k: 17}, {m: 4, n: 40, k: 20}, {tB: true, m: 3, n: 20, k: 17}} {
		calls = calls[:0]
		o := newOperands[float32](rand.New(rand.NewPCG(23, 24)), s)
		gemm(&im, Par{}, s.tA, s.tB, s.m, s.n, s.k, 1, o.a, o.lda, o.b, o.ldb, 0, o.c, o.ldc)
		const size = 4 // bytes per float32
		tiles := ceilDiv(min(s.m, im.mc), im.mr)
		told := 0
		for i, cl := range calls {
			// The block read after this one: the next call on other B.
			j := i + 1
			for j < len(calls) && calls[j].b == cl.b {
				j++
			}
			if j == len(calls) || j-i > 2 {
				// Nothing is read after the item's last block, and only the
				// last two tiles against a block are told.
				require.Zero(t, cl.nNext, "%+v: call %d of %d", s, i, len(calls))
				continue
			}
			nb := calls[j]
			want := nb.b
			if j-i == 1 && i > 0 && calls[i-1].b == cl.b {
				want += uintptr(nb.k * im.nr / 2 * size) // the last of two: the second half
			}
			require.Equal(t, want, cl.next, "%+v: call %d of %d (%d tiles a block)", s, i, len(calls), tiles)
			told++
		}
		require.NotZero(t, told, "%+v", s)
	}
}

// TestGemmConcurrentCalls runs products from several goroutines at once, as
// the engine's sampler and trainer do; shared scratch pools must not mix
// them up.
func TestGemmConcurrentCalls(t *testing.T) {
	t.Parallel()
	shapes := []shape{
		{m: 40, n: 70, k: 300, padA: 1},
		{tB: true, m: 8, n: 90, k: 130},
		{tA: true, m: 33, n: 10, k: 200},
		{tA: true, tB: true, m: 50, n: 40, k: 60, padC: 2},
	}
	rng := rand.New(rand.NewPCG(31, 32))
	ops := make([]operands[float32], len(shapes))
	want := make([][]float32, len(shapes))
	for i, s := range shapes {
		ops[i] = newOperands[float32](rng, s)
		want[i] = slices.Clone(ops[i].c)
		Par{}.Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, ops[i].a, ops[i].lda, ops[i].b, ops[i].ldb, 0.5, want[i], ops[i].ldc)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := range 8 {
		wg.Go(func() {
			for rep := range 5 {
				i := (g + rep) % len(shapes)
				o, s := ops[i], shapes[i]
				got := slices.Clone(o.c)
				Par{Threads: 2}.Sgemm(s.tA, s.tB, s.m, s.n, s.k, 1, o.a, o.lda, o.b, o.ldb, 0.5, got, o.ldc)
				for r := range s.m {
					if !slices.Equal(got[r*o.ldc:r*o.ldc+s.n], want[i][r*o.ldc:r*o.ldc+s.n]) {
						errs <- fmt.Sprintf("goroutine %d, shape %+v: row %d differs from the serial result", g, s, r)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
