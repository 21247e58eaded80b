// Command kernels measures the engine's matrix kernels on Qwen3-0.6B's
// products (hidden 1024, MLP 3072), in float32 (Sgemm) and with bfloat16
// weights (SgemmBF16, and SgemmBF16RoundA which rounds the activations)
// and half-precision weights (SgemmF16), next to float32 products through
// numpy in the same
// run, and the machine's memory bandwidth against the 1-row decode product
// streaming weights that do not fit in cache.
//
// Each shape prints two lines: the rates over all the calls timed, and over
// each product's fastest call (numpy's included). On a machine shared with
// other work the two differ by up to a third, and the fastest calls are
// the steadier comparison: a neighbour on the same physical core slows
// every call it overlaps, whichever side is being timed.
//
//	go run ./bench/kernels -json
//
// The numpy side runs with OPENBLAS_NUM_THREADS and OMP_NUM_THREADS set to
// -threads and without OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, so that
// OpenBLAS picks its kernel for this CPU; the BLAS library numpy loaded and
// OpenBLAS's core name are printed. Where OpenBLAS picks a core without
// AVX-512 on an AVX-512 CPU, numpy starts again on the core blascore.Force
// names, and both names are printed (openblas_corename_autodetected). With -openblas DIR (default: Debian's
// libopenblas0-pthread folder, when it exists) the subprocess loads the
// libblas.so.3 in DIR first. Ratios against a BLAS that is not OpenBLAS
// (Debian's reference BLAS is about 30× slower) are not reported.
//
// OpenBLAS's threads keep spinning after a product returns (about 0.1 s on
// a Xeon, a whole core each), so after each numpy measurement the command
// waits until the numpy process stops using CPU (read from Linux's
// /proc/PID/task/*/schedstat) before timing the engine: otherwise the
// engine's next measurement shares its cores with them. The waits are
// reported (numpy_settle_ms).
//
// The last line of -json output is one JSON object.
package main

import (
	"bufio"
	_ "embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tandemrl/tandem/bench/internal/blascore"
	"github.com/tandemrl/tandem/engine/kernels"
)

//go:embed numpy_ref.py
var numpyRef string

type shape struct {
	Name   string `json:"name"`
	M      int    `json:"m"`
	N      int    `json:"n"`
	K      int    `json:"k"`
	TransB bool   `json:"trans_b"`
}

// shapes: the forward product of an MLP projection over 512 tokens, its
// input gradient, the same projection over a 256-token prompt and in the
// sampling step of 64, 16 and 1 samples, and a chunk of 8192 vocabulary
// rows of the unembedding.
var shapes = []shape{
	{"XWt-512x3072x1024", 512, 3072, 1024, true},
	{"GW-512x1024x3072", 512, 1024, 3072, false},
	{"XWt-256x3072x1024", 256, 3072, 1024, true},
	{"XWt-64x3072x1024", 64, 3072, 1024, true},
	{"XWt-16x3072x1024", 16, 3072, 1024, true},
	{"XWt-1x3072x1024", 1, 3072, 1024, true},
	{"XWt-512x8192x1024", 512, 8192, 1024, true},
}

// loraShape is one product of a rank-16 LoRA on Qwen3-0.6B's MLP up
// projection (1024 → 3072) over a training batch of 8 × 256 tokens, as
// engine/layers.go calls it: op(A) is M×K, op(B) K×N, and Beta is the
// engine's (1 where the product is added to an output or a gradient).
type loraShape struct {
	Name   string  `json:"name"`
	TransA bool    `json:"trans_a"`
	TransB bool    `json:"trans_b"`
	M      int     `json:"m"`
	N      int     `json:"n"`
	K      int     `json:"k"`
	Beta   float32 `json:"beta"`
}

// loraShapes: the forward pass's u = x·Aᵀ and y += s·u·Bᵀ, the backward
// pass's t = dy·B and dx += s·t·A, and the adapter's gradients
// gB += s·dyᵀ·u and gA += s·tᵀ·x (engine/layers.go).
var loraShapes = []loraShape{
	{"lora-xAt-2048x16x1024", false, true, 2048, 16, 1024, 0},
	{"lora-uBt-2048x3072x16", false, true, 2048, 3072, 16, 1},
	{"lora-dyB-2048x16x3072", false, false, 2048, 16, 3072, 0},
	{"lora-tA-2048x1024x16", false, false, 2048, 1024, 16, 1},
	{"lora-dytu-3072x16x2048", true, false, 3072, 16, 2048, 1},
	{"lora-ttx-16x1024x2048", true, false, 16, 1024, 2048, 1},
}

// loraRow is one LoRA product's float32 rate beside numpy's (which
// computes it with beta 0: np.matmul into C).
type loraRow struct {
	Shape     string  `json:"shape"`
	Beta      float32 `json:"beta"`
	F32       float64 `json:"f32_gflops"`
	Numpy     float64 `json:"numpy_gflops,omitempty"`
	F32OverNp float64 `json:"f32_over_numpy,omitempty"`
	Fastest   struct {
		F32       float64 `json:"f32_gflops"`
		Numpy     float64 `json:"numpy_gflops,omitempty"`
		F32OverNp float64 `json:"f32_over_numpy,omitempty"`
	} `json:"fastest"`
}

type row struct {
	Shape       string  `json:"shape"`
	F32         float64 `json:"f32_gflops"`
	BF16        float64 `json:"bf16_gflops"`
	BF16RoundA  float64 `json:"bf16_rounda_gflops"`
	F16         float64 `json:"f16_gflops"`
	Numpy       float64 `json:"numpy_gflops,omitempty"`
	BF16OverF   float64 `json:"bf16_over_f32"`
	RoundAOverF float64 `json:"bf16_rounda_over_f32"`
	F32OverNp   float64 `json:"f32_over_numpy,omitempty"`
	BF16OverNp  float64 `json:"bf16_over_numpy,omitempty"`
	// Fastest is each product's rate over its fastest call in the shape's
	// rounds: on a machine shared with other work (a neighbour on the same
	// physical core slows every call it overlaps), the figure least blurred
	// by it.
	Fastest fastest `json:"fastest"`
}

// fastest holds GFLOP/s over the fastest call of each product.
type fastest struct {
	F32        float64 `json:"f32_gflops"`
	BF16       float64 `json:"bf16_gflops"`
	BF16RoundA float64 `json:"bf16_rounda_gflops"`
	F16        float64 `json:"f16_gflops"`
	Numpy      float64 `json:"numpy_gflops,omitempty"`
	F32OverNp  float64 `json:"f32_over_numpy,omitempty"`
	BF16OverNp float64 `json:"bf16_over_numpy,omitempty"`
}

type report struct {
	Threads         int       `json:"threads"`
	Implementation  string    `json:"f32_implementation"`
	BF16Impl        string    `json:"bf16_implementation"`
	F16Impl         string    `json:"f16_implementation"`
	Rows            []row     `json:"rows"`
	LoraRows        []loraRow `json:"lora_rows"`
	BandwidthGBs    float64   `json:"memory_bandwidth_gbs"`
	DecodeBF16GBs   float64   `json:"decode_stream_bf16_gbs"`
	DecodeF32GBs    float64   `json:"decode_stream_f32_gbs"`
	DecodeF16GBs    float64   `json:"decode_stream_f16_gbs"`
	DecodeF16Frac   float64   `json:"decode_stream_f16_of_bandwidth"`
	DecodeF16OverF  float64   `json:"decode_stream_f16_speedup"`
	DecodeBF16Frac  float64   `json:"decode_stream_bf16_of_bandwidth"`
	DecodeBF16OverF float64   `json:"decode_stream_bf16_speedup"`
	// DecodeRounds are decodeStream's rounds, each with the bandwidth
	// read just before it; the Beside fields are the medians over them of
	// each product's rate over that bandwidth.
	DecodeRounds     []decodeRound `json:"decode_rounds"`
	DecodeBF16Beside float64       `json:"decode_stream_bf16_of_adjacent_bandwidth"`
	DecodeF16Beside  float64       `json:"decode_stream_f16_of_adjacent_bandwidth"`
	DecodeF32Beside  float64       `json:"decode_stream_f32_of_adjacent_bandwidth"`
	BLAS             string        `json:"numpy_blas,omitempty"`
	NumpySettleMs    float64       `json:"numpy_settle_ms,omitempty"`
	CoreName         string        `json:"openblas_corename,omitempty"`
	CoreDetected     string        `json:"openblas_corename_autodetected,omitempty"`
	NumpyNote        string        `json:"numpy_note,omitempty"`
}

func main() {
	threads := flag.Int("threads", runtime.NumCPU(), "threads for both sides")
	seconds := flag.Float64("seconds", 1, "seconds per measurement")
	useNumpy := flag.Bool("numpy", true, "also run numpy's float32 products when python3 with numpy is available")
	openblas := flag.String("openblas", "/usr/lib/x86_64-linux-gnu/openblas-pthread", "folder whose libblas.so.3 the numpy subprocess loads first (ignored when absent)")
	asJSON := flag.Bool("json", false, "end with one JSON line")
	flag.Parse()
	dur := time.Duration(*seconds * float64(time.Second))
	par := kernels.Par{Threads: *threads}
	rep := report{Threads: *threads, Implementation: kernels.Implementation(), BF16Impl: kernels.BF16Implementation(), F16Impl: kernels.F16Implementation()}

	var np *numpyProc
	if *useNumpy {
		var err error
		np, err = startNumpy(*threads, *openblas, "")
		if err == nil {
			if force := blascore.ForceHere(np.info.CoreName); force != "" {
				rep.CoreDetected = np.info.CoreName
				np.close()
				np, err = startNumpy(*threads, *openblas, force)
			}
		}
		if err != nil {
			rep.NumpyNote = err.Error()
			fmt.Println("numpy: " + rep.NumpyNote)
		} else {
			defer np.close()
			rep.BLAS, rep.CoreName = np.info.BLAS, np.info.CoreName
			fmt.Printf("numpy %s, BLAS %s (OpenBLAS core %q), %d threads\n", np.info.Numpy, np.info.BLAS, np.info.CoreName, *threads)
			if rep.CoreDetected != "" {
				fmt.Printf("OpenBLAS picked core %q, without AVX-512, on this AVX-512 CPU; numpy runs with OPENBLAS_CORETYPE=%s\n", rep.CoreDetected, np.info.CoreName)
			}
			if np.info.CoreName == "" {
				rep.NumpyNote = "numpy's BLAS is not OpenBLAS (the reference BLAS is about 30× slower); no ratios reported: install libopenblas0-pthread"
				fmt.Println(rep.NumpyNote)
			}
		}
	}
	for _, s := range shapes {
		r := measureShape(par, s, dur, np)
		if np != nil && np.settles > 0 {
			rep.NumpySettleMs = float64(np.settled.Milliseconds()) / float64(np.settles)
		}
		if r.Numpy > 0 && rep.CoreName != "" {
			r.F32OverNp, r.BF16OverNp = r.F32/r.Numpy, r.BF16/r.Numpy
			r.Fastest.F32OverNp, r.Fastest.BF16OverNp = r.Fastest.F32/r.Fastest.Numpy, r.Fastest.BF16/r.Fastest.Numpy
		}
		rep.Rows = append(rep.Rows, r)
		fmt.Printf("%-20s f32 %7.1f   bf16 %7.1f   bf16 A rounded %7.1f   f16 %7.1f GFLOP/s   bf16/f32 %.2f   A rounded/f32 %.2f", s.Name, r.F32, r.BF16, r.BF16RoundA, r.F16, r.BF16OverF, r.RoundAOverF)
		if r.F32OverNp > 0 {
			fmt.Printf("   numpy f32 %7.1f   f32/numpy %.2f   bf16/numpy %.2f", r.Numpy, r.F32OverNp, r.BF16OverNp)
		}
		fmt.Println()
		fmt.Printf("%-20s fastest call: f32 %7.1f   bf16 %7.1f   bf16 A rounded %7.1f   f16 %7.1f GFLOP/s", "", r.Fastest.F32, r.Fastest.BF16, r.Fastest.BF16RoundA, r.Fastest.F16)
		if r.Fastest.F32OverNp > 0 {
			fmt.Printf("   numpy f32 %7.1f   f32/numpy %.2f   bf16/numpy %.2f", r.Fastest.Numpy, r.Fastest.F32OverNp, r.Fastest.BF16OverNp)
		}
		fmt.Println()
	}
	fmt.Println("rank-16 LoRA products (float32 adapters; the engine at its beta, numpy at beta 0):")
	for _, s := range loraShapes {
		r := measureLora(par, s, dur, np)
		if r.Numpy > 0 && rep.CoreName != "" {
			r.F32OverNp, r.Fastest.F32OverNp = r.F32/r.Numpy, r.Fastest.F32/r.Fastest.Numpy
		}
		rep.LoraRows = append(rep.LoraRows, r)
		fmt.Printf("%-23s beta %g   f32 %7.1f GFLOP/s", s.Name, s.Beta, r.F32)
		if r.F32OverNp > 0 {
			fmt.Printf("   numpy f32 %7.1f   f32/numpy %.2f", r.Numpy, r.F32OverNp)
		}
		fmt.Printf("   fastest call: f32 %7.1f", r.Fastest.F32)
		if r.Fastest.F32OverNp > 0 {
			fmt.Printf("   numpy f32 %7.1f   f32/numpy %.2f", r.Fastest.Numpy, r.Fastest.F32OverNp)
		}
		fmt.Println()
	}
	rd := newReader(*threads)
	rep.BandwidthGBs = rd.best(5, dur)
	rep.DecodeBF16GBs, rep.DecodeF16GBs, rep.DecodeF32GBs, rep.DecodeRounds = decodeStream(par, dur, rd)
	rep.DecodeBF16Frac = rep.DecodeBF16GBs / rep.BandwidthGBs
	rep.DecodeF16Frac = rep.DecodeF16GBs / rep.BandwidthGBs
	rep.DecodeBF16Beside = medianOf(rep.DecodeRounds, func(r decodeRound) float64 { return r.BF16 / r.Bandwidth })
	rep.DecodeF16Beside = medianOf(rep.DecodeRounds, func(r decodeRound) float64 { return r.F16 / r.Bandwidth })
	rep.DecodeF32Beside = medianOf(rep.DecodeRounds, func(r decodeRound) float64 { return r.F32 / r.Bandwidth })
	// Same rows, half the bytes: the speed-up per product is the ratio of
	// the bytes rates times two.
	rep.DecodeBF16OverF = 2 * rep.DecodeBF16GBs / rep.DecodeF32GBs
	rep.DecodeF16OverF = 2 * rep.DecodeF16GBs / rep.DecodeF32GBs
	if rep.NumpySettleMs > 0 {
		fmt.Printf("after each numpy measurement, its BLAS threads spun on for %.0f ms on average before the engine was timed again\n", rep.NumpySettleMs)
	}
	fmt.Printf("memory bandwidth (read) %.1f GB/s; 1-row decode over 240 MiB of weights: bf16 %.1f GB/s (%.0f%% of it), f16 %.1f GB/s (%.0f%%), f32 %.1f GB/s; bf16 %.2f×, f16 %.2f× faster per product\n",
		rep.BandwidthGBs, rep.DecodeBF16GBs, 100*rep.DecodeBF16Frac, rep.DecodeF16GBs, 100*rep.DecodeF16Frac, rep.DecodeF32GBs, rep.DecodeBF16OverF, rep.DecodeF16OverF)
	fmt.Printf("1-row decode over the bandwidth read just before each of its %d rounds (median): bf16 %.0f%%, f16 %.0f%%, f32 %.0f%%; rounds (bandwidth, bf16, f16, f32 GB/s):", len(rep.DecodeRounds), 100*rep.DecodeBF16Beside, 100*rep.DecodeF16Beside, 100*rep.DecodeF32Beside)
	for _, r := range rep.DecodeRounds {
		fmt.Printf(" (%.1f, %.1f, %.1f, %.1f)", r.Bandwidth, r.BF16, r.F16, r.F32)
	}
	fmt.Println()

	if *asJSON {
		b, _ := json.Marshal(rep)
		fmt.Println(string(b))
	}
}

// measureShape times Sgemm, SgemmBF16, SgemmBF16RoundA, SgemmF16 and
// (with np) numpy on s in turn,
// four rounds of a twelfth of dur each, so all see the same machine; it
// returns GFLOP/s.
func measureShape(par kernels.Par, s shape, dur time.Duration, np *numpyProc) row {
	rng := rand.New(rand.NewPCG(1, uint64(s.M)))
	a := randF32(rng, s.M*s.K)
	w32 := randF32(rng, s.N*s.K)
	w16 := make([]kernels.BF16, len(w32))
	kernels.RoundBF16(w16, w32)
	kernels.WidenBF16(w32, w16) // the same values in all three
	h16 := make([]kernels.F16, len(w32))
	kernels.RoundF16(h16, w32)
	c := make([]float32, s.M*s.N)
	ldb := s.K
	if !s.TransB {
		ldb = s.N
	}
	flops := 2 * float64(s.M) * float64(s.N) * float64(s.K)
	products := []func(){
		func() { par.Sgemm(false, s.TransB, s.M, s.N, s.K, 1, a, s.K, w32, ldb, 0, c, s.N) },
		func() { par.SgemmBF16(s.TransB, s.M, s.N, s.K, 1, a, s.K, w16, ldb, 0, c, s.N) },
		func() { par.SgemmBF16RoundA(s.TransB, s.M, s.N, s.K, 1, a, s.K, w16, ldb, 0, c, s.N) },
		func() { par.SgemmF16(s.TransB, s.M, s.N, s.K, 1, a, s.K, h16, ldb, 0, c, s.N) },
	}
	total := make([]time.Duration, len(products))
	calls := make([]int, len(products))
	best := make([]time.Duration, len(products))
	var npr numpyRates
	for range 4 {
		for i, f := range products {
			d, n, b := timeLoop(dur/12, f)
			total[i], calls[i] = total[i]+d, calls[i]+n
			if best[i] == 0 || b < best[i] {
				best[i] = b
			}
		}
		npr.add(np, numpyReq{M: s.M, N: s.N, K: s.K, TransB: s.TransB}, dur/12)
	}
	rate := func(i int) float64 { return flops * float64(calls[i]) / total[i].Seconds() / 1e9 }
	fast := func(i int) float64 { return flops / best[i].Seconds() / 1e9 }
	r := row{Shape: s.Name, F32: rate(0), BF16: rate(1), BF16RoundA: rate(2), F16: rate(3),
		Fastest: fastest{F32: fast(0), BF16: fast(1), BF16RoundA: fast(2), F16: fast(3)}}
	r.BF16OverF = r.BF16 / r.F32
	r.RoundAOverF = r.BF16RoundA / r.F32
	r.Numpy, r.Fastest.Numpy = npr.mean(), npr.best
	return r
}

// measureLora times Sgemm and (with np) numpy on s in turn, four rounds
// of a twelfth of dur each, as measureShape does.
func measureLora(par kernels.Par, s loraShape, dur time.Duration, np *numpyProc) loraRow {
	rng := rand.New(rand.NewPCG(3, uint64(s.M*s.N)))
	a := randF32(rng, s.M*s.K)
	b := randF32(rng, s.K*s.N)
	c := randF32(rng, s.M*s.N)
	lda, ldb := s.K, s.N
	if s.TransA {
		lda = s.M
	}
	if s.TransB {
		ldb = s.K
	}
	product := func() { par.Sgemm(s.TransA, s.TransB, s.M, s.N, s.K, 1, a, lda, b, ldb, s.Beta, c, s.N) }
	flops := 2 * float64(s.M) * float64(s.N) * float64(s.K)
	var total, best time.Duration
	calls := 0
	var npr numpyRates
	for range 4 {
		d, n, fast := timeLoop(dur/12, product)
		total, calls = total+d, calls+n
		if best == 0 || fast < best {
			best = fast
		}
		npr.add(np, numpyReq{M: s.M, N: s.N, K: s.K, TransA: s.TransA, TransB: s.TransB}, dur/12)
	}
	r := loraRow{Shape: s.Name, Beta: s.Beta, F32: flops * float64(calls) / total.Seconds() / 1e9}
	r.Fastest.F32 = flops / best.Seconds() / 1e9
	r.Numpy, r.Fastest.Numpy = npr.mean(), npr.best
	return r
}

// numpyRates accumulates numpy's rounds of one product: the sum of their
// rates over all calls and the best fastest-call rate.
type numpyRates struct {
	sum, best float64
	rounds    int
}

// add measures req on np for d (nothing without np) and lets np's threads
// settle; a failed round is printed and left out.
func (r *numpyRates) add(np *numpyProc, req numpyReq, d time.Duration) {
	if np == nil {
		return
	}
	g, best, err := np.measure(req, d)
	np.settle()
	if err != nil {
		fmt.Println("numpy:", err)
		return
	}
	r.sum += g
	r.best = max(r.best, best)
	r.rounds++
}

// mean is the mean rate over the rounds (0 without any).
func (r numpyRates) mean() float64 {
	if r.rounds == 0 {
		return 0
	}
	return r.sum / float64(r.rounds)
}

// timeLoop runs f once to warm up, then until d has passed; it returns the
// time, the calls timed and the fastest call.
func timeLoop(d time.Duration, f func()) (time.Duration, int, time.Duration) {
	return timeLoopClock(time.Now, d, f)
}

// timeLoopClock is timeLoop reading the time from now.
func timeLoopClock(now func() time.Time, d time.Duration, f func()) (time.Duration, int, time.Duration) {
	f()
	start := now()
	n := 0
	var best time.Duration
	last := start
	for ; last.Sub(start) < d || n == 0; n++ {
		f()
		t := now()
		if call := t.Sub(last); n == 0 || call < best {
			best = call
		}
		last = t
	}
	return last.Sub(start), n, best
}

func randF32(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	return x
}

// reader reads a 512 MiB buffer on threads goroutines (each a dot product
// of two halves of its share, AVX2) to measure the read bandwidth.
type reader struct {
	x       []float32
	threads int
}

func newReader(threads int) *reader {
	x := make([]float32, (512<<20)/4)
	for i := range x {
		x[i] = 1
	}
	return &reader{x: x, threads: threads}
}

// best is the best of at least passes reads, going on until dur has
// passed (at most 21), in GB/s.
func (rd *reader) best(passes int, dur time.Duration) float64 {
	part := len(rd.x) / rd.threads / 2 * 2
	best := 0.0
	deadline := time.Now().Add(dur)
	for r := 0; r < passes || time.Now().Before(deadline); r++ {
		start := time.Now()
		var wg sync.WaitGroup
		for t := range rd.threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := rd.x[t*part : (t+1)*part]
				kernels.Sdot(s[:part/2], s[part/2:])
			}()
		}
		wg.Wait()
		best = max(best, float64(rd.threads*part*4)/time.Since(start).Seconds()/1e9)
		if r >= 20 {
			break
		}
	}
	return best
}

// decodeRound is one round of decodeStream: the read bandwidth measured
// just before the round's three products and their rates, in GB/s.
type decodeRound struct {
	Bandwidth float64 `json:"bandwidth_gbs"`
	BF16      float64 `json:"bf16_gbs"`
	F16       float64 `json:"f16_gbs"`
	F32       float64 `json:"f32_gbs"`
}

// decodeStream runs the 1-row product over 40 projections of 3072×1024
// (240 MiB in bfloat16 or half precision, 480 MiB in float32), one after
// another as a decode step streams a model's layers, in four rounds; it
// returns the weight bytes read per second of each over all rounds, and
// each round with the bandwidth rd read just before it (a machine whose
// memory is shared with other work changes speed within seconds, so a
// fraction of a bandwidth measured minutes apart says little).
func decodeStream(par kernels.Par, dur time.Duration, rd *reader) (bf, f16, f32 float64, rounds []decodeRound) {
	const n, k, mats = 3072, 1024, 40
	rng := rand.New(rand.NewPCG(2, 2))
	a := randF32(rng, k)
	w16 := make([][]kernels.BF16, mats)
	h16 := make([][]kernels.F16, mats)
	w32 := make([][]float32, mats)
	for i := range mats {
		w32[i] = randF32(rng, n*k)
		w16[i] = make([]kernels.BF16, n*k)
		kernels.RoundBF16(w16[i], w32[i])
		h16[i] = make([]kernels.F16, n*k)
		kernels.RoundF16(h16[i], w32[i])
	}
	c := make([]float32, n)
	// The three products, each with the bytes of weights it reads.
	products := []struct {
		bytes int
		run   func()
	}{
		{mats * n * k * 2, func() {
			for _, w := range w16 {
				par.SgemmBF16(true, 1, n, k, 1, a, k, w, k, 0, c, n)
			}
		}},
		{mats * n * k * 2, func() {
			for _, w := range h16 {
				par.SgemmF16(true, 1, n, k, 1, a, k, w, k, 0, c, n)
			}
		}},
		{mats * n * k * 4, func() {
			for _, w := range w32 {
				par.Sgemm(false, true, 1, n, k, 1, a, k, w, k, 0, c, n)
			}
		}},
	}
	var total [3]time.Duration
	var calls [3]int
	for range 4 {
		rnd := decodeRound{Bandwidth: rd.best(3, 0)}
		var rate [3]float64
		for i, p := range products {
			d, r, _ := timeLoop(dur/8, p.run)
			total[i], calls[i] = total[i]+d, calls[i]+r
			rate[i] = float64(p.bytes*r) / d.Seconds() / 1e9
		}
		rnd.BF16, rnd.F16, rnd.F32 = rate[0], rate[1], rate[2]
		rounds = append(rounds, rnd)
	}
	gbs := func(i int) float64 { return float64(products[i].bytes*calls[i]) / total[i].Seconds() / 1e9 }
	return gbs(0), gbs(1), gbs(2), rounds
}

// medianOf is the median of f over rounds.
func medianOf(rounds []decodeRound, f func(decodeRound) float64) float64 {
	v := make([]float64, len(rounds))
	for i, r := range rounds {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

// numpyProc is numpy_ref.py running, answering one measurement per line.
type numpyProc struct {
	cmd     *exec.Cmd
	in      io.WriteCloser
	out     *bufio.Scanner
	script  string
	settled time.Duration // total time settle waited
	settles int
	info    struct {
		BLAS     string `json:"blas"`
		CoreName string `json:"corename"`
		Numpy    string `json:"numpy"`
	}
}

// startNumpy starts numpy_ref.py with threads BLAS threads, with
// OPENBLAS_CORETYPE=coreType (without it when ""), without
// OPENBLAS_L2_SIZE, loading openblas/libblas.so.3 first when it exists,
// and reads the BLAS it loaded. A forced core OpenBLAS does not report
// back is an error.
func startNumpy(threads int, openblas, coreType string) (*numpyProc, error) {
	py := pythonWithNumpy()
	if py == "" {
		return nil, fmt.Errorf("no python3 with numpy found (tried python3 on PATH and /usr/bin/python3)")
	}
	f, err := os.CreateTemp("", "numpy_ref-*.py")
	if err != nil {
		return nil, err
	}
	f.WriteString(numpyRef)
	f.Close()
	p := &numpyProc{script: f.Name(), cmd: exec.Command(py, f.Name())}
	env := []string{"OPENBLAS_NUM_THREADS=" + strconv.Itoa(threads), "OMP_NUM_THREADS=" + strconv.Itoa(threads)}
	for _, e := range os.Environ() {
		switch name, _, _ := strings.Cut(e, "="); name {
		case "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS":
			continue
		}
		env = append(env, e)
	}
	if coreType != "" {
		env = append(env, "OPENBLAS_CORETYPE="+coreType)
	}
	if st, err := os.Stat(openblas + "/libblas.so.3"); err == nil && !st.IsDir() {
		env = append(env, "LD_LIBRARY_PATH="+openblas)
	}
	p.cmd.Env = env
	p.cmd.Stderr = os.Stderr
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		os.Remove(p.script)
		return nil, fmt.Errorf("starting %s: %w", py, err)
	}
	p.out = bufio.NewScanner(out)
	if !p.out.Scan() {
		p.close()
		return nil, fmt.Errorf("numpy_ref.py printed nothing")
	}
	if err := json.Unmarshal(p.out.Bytes(), &p.info); err != nil {
		p.close()
		return nil, fmt.Errorf("numpy_ref.py's first line %q: %w", p.out.Text(), err)
	}
	if coreType != "" && p.info.CoreName != coreType {
		p.close()
		return nil, fmt.Errorf("OPENBLAS_CORETYPE=%s: OpenBLAS runs core %q instead", coreType, p.info.CoreName)
	}
	return p, nil
}

// numpyReq is one product for numpy_ref.py: op(A)·op(B), op(A) M×K.
type numpyReq struct {
	M, N, K        int
	TransA, TransB bool
}

// measure asks for r's product repeated for d and returns its GFLOP/s,
// over all calls and over the fastest.
func (p *numpyProc) measure(r numpyReq, d time.Duration) (float64, float64, error) {
	req, _ := json.Marshal(map[string]any{"m": r.M, "n": r.N, "k": r.K, "trans_a": r.TransA, "trans_b": r.TransB, "seconds": d.Seconds()})
	if _, err := fmt.Fprintf(p.in, "%s\n", req); err != nil {
		return 0, 0, err
	}
	if !p.out.Scan() {
		return 0, 0, fmt.Errorf("numpy_ref.py stopped answering")
	}
	var ans struct {
		GFLOPS *float64 `json:"gflops"`
		Best   *float64 `json:"best_gflops"`
	}
	if err := json.Unmarshal(p.out.Bytes(), &ans); err != nil {
		return 0, 0, fmt.Errorf("numpy_ref.py answered %q: %w", p.out.Text(), err)
	}
	if ans.GFLOPS == nil || ans.Best == nil {
		return 0, 0, fmt.Errorf("numpy_ref.py answered %q, want gflops and best_gflops", p.out.Text())
	}
	return *ans.GFLOPS, *ans.Best, nil
}

// settle waits until the numpy process has used less than a tenth of a
// core over settleWindow, or for settleMax, and adds the wait to p.settled.
// Without Linux's per-thread schedstat files it returns at once.
func (p *numpyProc) settle() {
	const settleWindow, settleMax = 10 * time.Millisecond, 2 * time.Second
	start := time.Now()
	prev, ok := p.cpuTime()
	for ok && time.Since(start) < settleMax {
		time.Sleep(settleWindow)
		var now time.Duration
		if now, ok = p.cpuTime(); ok && now-prev < settleWindow/10 {
			break
		}
		prev = now
	}
	p.settled += time.Since(start)
	p.settles++
}

// cpuTime is the CPU time all of the numpy process's threads have run, from
// the first field of /proc/PID/task/TID/schedstat (nanoseconds).
func (p *numpyProc) cpuTime() (time.Duration, bool) {
	dir := fmt.Sprintf("/proc/%d/task", p.cmd.Process.Pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, false
	}
	var total time.Duration
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended
		}
		f, _, _ := strings.Cut(string(b), " ")
		ns, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, false
		}
		total += time.Duration(ns)
	}
	return total, true
}

func (p *numpyProc) close() {
	p.in.Close()
	p.cmd.Wait()
	os.Remove(p.script)
}

// pythonWithNumpy is the first of python3 on PATH and /usr/bin/python3
// that imports numpy ("" if neither does).
func pythonWithNumpy() string {
	var cands []string
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	cands = append(cands, "/usr/bin/python3")
	for _, p := range cands {
		if exec.Command(p, "-c", "import numpy").Run() == nil {
			return p
		}
	}
	return ""
}
