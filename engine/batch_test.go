package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// callSpec is one Sample call of a test schedule: it arrives when the
// scheduler starts step at (or, when the sampler went idle before that,
// once the calls before it are answered).
type callSpec struct {
	prompt []int
	n      int
	p      SamplingParams
	ver    int // index into the schedule's versions
	at     uint64
}

type callResult struct {
	Seqs     []Sequence
	PromptLP []float64
	Err      error
}

// randomSpecs draws count calls over a model of shape cfg: prompt lengths,
// n, max_tokens, temperatures, top-k/p, stop tokens and strings (text gives
// a token's text), prompt log-probs, versions and arrival steps.
func randomSpecs(rng *rand.Rand, cfg Config, count, versions int, text func(int) string) []callSpec {
	specs := make([]callSpec, count)
	at := uint64(0)
	for i := range specs {
		tp := 1 + rng.IntN(cfg.Context-10)
		prompt := make([]int, tp)
		for j := range prompt {
			prompt[j] = rng.IntN(cfg.Vocab)
		}
		ver := rng.IntN(versions)
		if i > 0 && rng.IntN(2) == 0 {
			// A prefix of an earlier prompt (possibly all of it), then
			// tokens of its own, often on the same version: calls that
			// can share cached rows.
			j := rng.IntN(i)
			prev := specs[j].prompt
			if rng.IntN(2) == 0 {
				ver = specs[j].ver
			}
			k := 1 + rng.IntN(len(prev))
			prompt = append([]int(nil), prev[:k]...)
			for range min(rng.IntN(4), cfg.Context-10-k) {
				prompt = append(prompt, rng.IntN(cfg.Vocab))
			}
		}
		p := SamplingParams{
			MaxTokens:      1 + rng.IntN(14),
			Temperature:    []float64{0, 0.7, 1, 1, 1.3}[rng.IntN(5)],
			Seed:           rng.Int64N(1000),
			PromptLogprobs: rng.IntN(3) == 0,
		}
		if rng.IntN(3) == 0 {
			p.TopK = 1 + rng.IntN(8)
		}
		if rng.IntN(3) == 0 {
			p.TopP = 0.5 + 0.4*rng.Float64()
		}
		if rng.IntN(3) == 0 {
			p.StopTokens = []int{rng.IntN(cfg.Vocab), rng.IntN(cfg.Vocab)}
		}
		if rng.IntN(4) == 0 {
			st := ""
			for st == "" {
				st = text(rng.IntN(cfg.Vocab))
			}
			p.StopStrings = []string{st}
		}
		if i > 0 {
			at += uint64(rng.IntN(4))
		}
		specs[i] = callSpec{prompt: prompt, n: 1 + rng.IntN(4), p: p, ver: ver, at: at}
	}
	return specs
}

// schedule runs specs on s, each call submitted when the scheduler starts
// the step its spec names (the test's hook holds the step until the call
// is queued: arrival times come from the schedule, not from timing). ctxs
// (nil: background) are the calls' contexts; onStep, when set, runs at the
// start of every step after that step's arrivals.
func schedule[T Float](t *testing.T, s *Sampler[T], vers []*Served[T], specs []callSpec, ctxs []context.Context, onStep func(step uint64, rows, groups int)) []callResult {
	t.Helper()
	res := make([]callResult, len(specs))
	dones := make([]chan struct{}, len(specs))
	for i := range dones {
		dones[i] = make(chan struct{})
	}
	s.lp.submitted = make(chan struct{})
	var mu sync.Mutex
	next := 0
	launch := func(i int) {
		ctx := context.Background()
		if ctxs != nil && ctxs[i] != nil {
			ctx = ctxs[i]
		}
		sp := specs[i]
		go func() {
			defer close(dones[i])
			seqs, plp, err := s.SampleWith(ctx, vers[sp.ver], sp.prompt, sp.n, sp.p)
			res[i] = callResult{Seqs: seqs, PromptLP: plp, Err: err}
		}()
		<-s.lp.submitted
	}
	s.lp.core.hook = func(step uint64, rows, groups int) {
		mu.Lock()
		for next < len(specs) && specs[next].at <= step {
			next++
			launch(next - 1)
		}
		mu.Unlock()
		if onStep != nil {
			onStep(step, rows, groups)
		}
	}
	for {
		mu.Lock()
		if next == len(specs) {
			mu.Unlock()
			break
		}
		next++
		launch(next - 1)
		mu.Unlock()
		for j := 0; ; j++ {
			mu.Lock()
			k := next
			mu.Unlock()
			if j >= k {
				break
			}
			<-dones[j]
		}
	}
	for _, d := range dones {
		<-d
	}
	return res
}

// alone runs each spec by itself on a fresh sampler.
func alone[T Float](t *testing.T, base *Model[T], opts SamplerOptions, ads []*Adapter[T], specs []callSpec) []callResult {
	t.Helper()
	s, vers := samplerWith(t, base, opts, ads)
	out := make([]callResult, len(specs))
	for i, sp := range specs {
		seqs, plp, err := s.SampleWith(context.Background(), vers[sp.ver], sp.prompt, sp.n, sp.p)
		out[i] = callResult{Seqs: seqs, PromptLP: plp, Err: err}
		require.NoError(t, err, "call %d alone", i)
	}
	require.NoError(t, s.Close())
	return out
}

// samplerWith returns a sampler and its served forms of ads (nil: base).
func samplerWith[T Float](t *testing.T, base *Model[T], opts SamplerOptions, ads []*Adapter[T]) (*Sampler[T], []*Served[T]) {
	t.Helper()
	s, err := NewSampler(base, opts)
	require.NoError(t, err)
	vers := make([]*Served[T], len(ads))
	for i, ad := range ads {
		vers[i], err = s.Prepare(ad)
		require.NoError(t, err)
	}
	return s, vers
}

// modelAndAdapters returns a peaky base of cfg and [nil, ad1, ad2].
func modelAndAdapters[T Float](t *testing.T, cfg Config, hf bool) (*Model[T], []*Adapter[T]) {
	t.Helper()
	var base *Model[T]
	if hf {
		base = hfModel[T](t, cfg, 4)
	} else {
		base, _ = trainedAdapter[T](t, cfg)
	}
	ads := []*Adapter[T]{nil}
	for seed := range uint64(2) {
		lc := DefaultLoraConfig()
		lc.TrainUnembed = seed == 1
		ad, err := NewAdapter[T](cfg, lc)
		require.NoError(t, err)
		randomizeAdapter(ad, 10+seed, 0.1)
		ads = append(ads, ad)
	}
	return base, ads
}

func hfText(id int) string { return fmt.Sprintf("<%d>", id) }

// TestBatchedMatchesAlone runs randomized mixes of calls (prompt lengths,
// n, stop conditions, max_tokens, sampling parameters, adapter versions,
// arrival steps) through one sampler at once and checks every call's
// tokens, log-probs and prompt log-probs are identical (==) to the same
// call run alone, under tight limits (seats, step budget, KV memory, so
// calls wait and samples join late) and under the defaults (steps of many
// more rows than one product block).
func TestBatchedMatchesAlone(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		hf    bool
		f64   bool
		half  string // "bf16" or "f16": the base keeps its matrices in that format
		calls int
		opts  SamplerOptions
	}{
		{name: "tandem-tight", calls: 24, opts: SamplerOptions{Threads: 2, MaxBatch: 5, PrefillChunk: 3, MaxStepTokens: 9, KVCacheBytes: 40 << 10}},
		{name: "tandem-wide", calls: 40, opts: SamplerOptions{Threads: 1}},
		{name: "hf-gqa", hf: true, calls: 32, opts: SamplerOptions{Threads: 2, PrefillChunk: 4, TokenText: hfText}},
		{name: "hf-gqa-tight", hf: true, calls: 16, opts: SamplerOptions{MaxBatch: 3, PrefillChunk: 5, MaxStepTokens: 8, KVCacheBytes: 20 << 10, TokenText: hfText}},
		{name: "hf-gqa-float64", hf: true, f64: true, calls: 16, opts: SamplerOptions{Threads: 2, PrefillChunk: 7, TokenText: hfText}},
		{name: "hf-gqa-bfloat16", hf: true, half: "bf16", calls: 24, opts: SamplerOptions{Threads: 2, PrefillChunk: 6, TokenText: hfText}},
		{name: "hf-gqa-float16", hf: true, half: "f16", calls: 16, opts: SamplerOptions{Threads: 2, PrefillChunk: 5, TokenText: hfText}},
	}
	for ci, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.f64 {
				checkBatchedMatchesAlone[float64](t, tc.hf, tc.half, tc.calls, tc.opts, uint64(ci))
			} else {
				checkBatchedMatchesAlone[float32](t, tc.hf, tc.half, tc.calls, tc.opts, uint64(ci))
			}
		})
	}
}

func checkBatchedMatchesAlone[T Float](t *testing.T, hf bool, half string, calls int, opts SamplerOptions, seed uint64) {
	cfg := smallConfig()
	text := tokenText
	if hf {
		cfg, text = qwenLikeConfig(), hfText
	}
	base, ads := modelAndAdapters[T](t, cfg, hf)
	if store := map[string]func(*Model[T]) (*Model[T], error){"bf16": StoreBF16[T], "f16": StoreF16[T]}[half]; store != nil {
		var err error
		base, err = store(base)
		require.NoError(t, err)
	}
	rng := rand.New(rand.NewPCG(seed, 77))
	specs := randomSpecs(rng, cfg, calls, len(ads), text)
	want := alone(t, base, opts, ads, specs)
	s, vers := samplerWith(t, base, opts, ads)
	lim, err := opts.limits()
	require.NoError(t, err)
	maxRows, mixed, queued := 0, false, false
	got := schedule(t, s, vers, specs, nil, func(_ uint64, rows, groups int) {
		maxRows, mixed = max(maxRows, rows), mixed || groups > 1
		core := s.lp.core
		admitted := 0
		for _, c := range core.calls {
			if c.admitted && !c.isDone() {
				admitted++
			}
			queued = queued || !c.admitted
		}
		assert.LessOrEqual(t, len(core.running), lim.maxBatch, "seats")
		assert.LessOrEqual(t, rows, lim.stepTokens, "step budget")
		if admitted > 1 {
			assert.LessOrEqual(t, core.reserved, lim.budget, "KV memory over budget with %d calls admitted", admitted)
		}
	})
	for i := range specs {
		require.NoError(t, got[i].Err, "call %d", i)
		assert.Equal(t, want[i], got[i], "call %d (%+v): batched differs from alone", i, specs[i].p)
	}
	require.NoError(t, s.Close())
	final := s.Stats()
	assert.True(t, mixed, "some step mixed adapter versions")
	if opts.MaxBatch == 0 {
		assert.Greater(t, maxRows, batchRows, "some step spans several product blocks")
	} else {
		assert.True(t, queued, "calls waited for seats or memory")
	}
	assert.Less(t, final.Steps, uint64(calls*20), "calls shared steps")
	assert.Positive(t, final.SharedRows, "calls copied cached prompt rows")
	assert.Zero(t, final.KVReservedBytes)
	assert.Zero(t, final.KVAllocatedBytes)
	assert.Zero(t, final.Running)
	assert.Equal(t, uint64(calls), final.Completed)
	t.Logf("%d calls: %d steps, %d decode and %d prompt rows (%d more copied), widest step %d rows", calls, final.Steps, final.DecodeRows, final.PrefillRows, final.SharedRows, maxRows)
}

// TestLoadDuringBatchedDecoding serves a new adapter while calls decode:
// every call computes with the adapter served when it started (the result
// equals that call alone under it), and the later calls with the new one.
func TestLoadDuringBatchedDecoding(t *testing.T) {
	t.Parallel()
	cfg := smallConfig()
	base, ads := modelAndAdapters[float32](t, cfg, false)
	rng := rand.New(rand.NewPCG(5, 5))
	specs := randomSpecs(rng, cfg, 20, 1, tokenText)
	for i := range specs {
		specs[i].p.MaxTokens = 10 + i%5
		specs[i].p.StopTokens, specs[i].p.StopStrings = nil, nil
		specs[i].at = uint64(2 * i)
	}
	// Versions in force: ads[1] until step 12, then ads[2]. ver says which
	// one each call starts on.
	const swap = 12
	for i := range specs {
		specs[i].ver = 1
		if specs[i].at >= swap {
			specs[i].ver = 2
		}
	}
	opts := SamplerOptions{Threads: 2}
	want := alone(t, base, opts, ads, specs)
	s, vers := samplerWith(t, base, opts, ads)
	s.Serve(vers[1])
	cur := []*Served[float32]{nil, vers[1], vers[1]}
	// The calls sample from whatever is served: nil version.
	mixed := false
	got := schedule(t, s, cur, specsAt(specs), nil, func(step uint64, _, groups int) {
		mixed = mixed || groups > 1
		if step == swap-1 {
			s.Serve(vers[2]) // before the calls arriving at step swap
		}
	})
	require.NoError(t, s.Close())
	assert.True(t, mixed, "a step mixed the two versions")
	for i := range specs {
		require.NoError(t, got[i].Err)
		assert.Equal(t, want[i], got[i], "call %d (started on version %d)", i, specs[i].ver)
	}
	assert.NotEqual(t, want[0].Seqs, alone(t, base, opts, ads, []callSpec{{prompt: specs[0].prompt, n: specs[0].n, p: specs[0].p, ver: 2}})[0].Seqs, "the versions differ")
}

// specsAt returns specs that sample from the served version (ver 0 of the
// schedule's versions is nil: SampleWith then takes the one served).
func specsAt(specs []callSpec) []callSpec {
	out := append([]callSpec(nil), specs...)
	for i := range out {
		out[i].ver = 0
	}
	return out
}

// TestCancelMidBatch cancels two calls while they decode among others:
// they return their context's error at once, the others finish exactly as
// alone, every seat and byte is given back and no goroutine is left.
func TestCancelMidBatch(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cfg := smallConfig()
	base, ads := modelAndAdapters[float32](t, cfg, false)
	rng := rand.New(rand.NewPCG(9, 9))
	specs := randomSpecs(rng, cfg, 12, len(ads), tokenText)
	for i := range specs {
		specs[i].p.MaxTokens = 12
		specs[i].p.StopTokens, specs[i].p.StopStrings = nil, nil
		specs[i].at = 0
	}
	opts := SamplerOptions{Threads: 2, MaxBatch: 16, PrefillChunk: 8}
	want := alone(t, base, opts, ads, specs)
	s, vers := samplerWith(t, base, opts, ads)
	ctxs := make([]context.Context, len(specs))
	cancels := map[int]context.CancelFunc{}
	for _, i := range []int{3, 7} {
		ctxs[i], cancels[i] = context.WithCancel(context.Background())
	}
	got := schedule(t, s, vers, specs, ctxs, func(step uint64, _, _ int) {
		if step == 4 {
			for _, c := range cancels {
				c()
			}
		}
	})
	for i := range specs {
		if cancels[i] != nil {
			assert.ErrorIs(t, got[i].Err, context.Canceled, "call %d", i)
			continue
		}
		require.NoError(t, got[i].Err, "call %d", i)
		assert.Equal(t, want[i], got[i], "call %d", i)
	}
	require.NoError(t, s.Close())
	st := s.Stats()
	assert.Equal(t, uint64(2), st.Abandoned)
	assert.Equal(t, uint64(len(specs)-2), st.Completed)
	assert.Zero(t, st.KVReservedBytes)
	assert.Zero(t, st.KVAllocatedBytes)
	assert.Zero(t, st.Running)
	_, _, err := s.Sample(context.Background(), []int{BOS}, 1, SamplingParams{MaxTokens: 2})
	assert.ErrorIs(t, err, ErrClosed)
}

// TestSamplerIdleHoldsNoGoroutine: without Close, the scheduler goroutine
// ends once the calls are answered.
func TestSamplerIdleHoldsNoGoroutine(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	base, _ := trainedAdapter[float32](t, smallConfig())
	s, err := NewSampler(base, SamplerOptions{Threads: 2})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			_, _, err := s.Sample(context.Background(), []int{BOS, 3 + i}, 2, SamplingParams{MaxTokens: 5, Temperature: 1})
			assert.NoError(t, err)
		})
	}
	wg.Wait()
}

// TestCloseFailsCallsInFlight: Close answers the calls in flight with
// ErrClosed and returns after the scheduler stopped.
func TestCloseFailsCallsInFlight(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	base, _ := trainedAdapter[float32](t, smallConfig())
	s, err := NewSampler(base, SamplerOptions{})
	require.NoError(t, err)
	s.lp.submitted, s.lp.closing = make(chan struct{}), make(chan struct{})
	atStep := make(chan struct{})
	s.lp.core.hook = func(step uint64, _, _ int) {
		if step == 2 {
			close(atStep)
			<-s.lp.closing // the step goes on once Close has marked the sampler closed
		}
	}
	errc := make(chan error, 1)
	go func() {
		_, _, err := s.Sample(context.Background(), []int{BOS}, 2, SamplingParams{MaxTokens: 20, Temperature: 1})
		errc <- err
	}()
	<-s.lp.submitted
	<-atStep
	require.NoError(t, s.Close())
	assert.ErrorIs(t, <-errc, ErrClosed)
}

// TestProductRowsBatchInvariant checks the fact batching rests on: a row
// of x·Wᵀ computed in a block of up to batchRows rows has the same bits as
// the row alone, for the engine's product shapes (wide, narrow as LoRA's
// x·Aᵀ, short inner dimension as LoRA's u·Bᵀ).
func TestProductRowsBatchInvariant(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, sh := range [][2]int{{512, 128}, {128, 512}, {16, 128}, {8, 32}, {512, 16}, {98, 128}, {60, 33}} {
		n, k := sh[0], sh[1]
		x, w := make([]float32, batchRows*k), make([]float32, n*k)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range w {
			w[i] = float32(rng.NormFloat64())
		}
		one := make([]float32, batchRows*n)
		for r := range batchRows {
			gemm(par{}, false, true, 1, n, k, 1, x[r*k:(r+1)*k], k, w, k, 0, one[r*n:(r+1)*n], n)
		}
		for m := 2; m <= batchRows; m++ {
			for lo := 0; lo+m <= batchRows; lo += m {
				y := make([]float32, m*n)
				gemm(par{threads: 2}, false, true, m, n, k, 1, x[lo*k:(lo+m)*k], k, w, k, 0, y, n)
				require.Equal(t, one[lo*n:(lo+m)*n], y, "shape %dx%d, rows %d..%d", n, k, lo, lo+m)
			}
		}
	}
}

// TestSamplerOptionsValidate rejects limits that cannot schedule.
func TestSamplerOptionsValidate(t *testing.T) {
	t.Parallel()
	base, _ := trainedAdapter[float32](t, smallConfig())
	for _, o := range []SamplerOptions{{MaxBatch: -1}, {MaxBatch: 8, PrefillChunk: 8, MaxStepTokens: 15}, {KVCacheBytes: -5}} {
		_, err := NewSampler(base, o)
		assert.ErrorIs(t, err, ErrConfig, "%+v", o)
	}
	lim, err := SamplerOptions{}.limits()
	require.NoError(t, err)
	assert.Equal(t, schedLimits{maxBatch: DefaultMaxBatch, stepTokens: 512, chunk: DefaultPrefillChunk, budget: DefaultKVCacheBytes}, lim)
}

// TestSharedPromptEdges: calls whose prompts are the same as an earlier
// call's, one token shorter or longer, or differ in the last token or the
// first, with and without prompt log-probs, share what they can of its
// cache and answer exactly as alone.
func TestSharedPromptEdges(t *testing.T) {
	t.Parallel()
	cfg := smallConfig()
	base, ads := modelAndAdapters[float32](t, cfg, false)
	rng := rand.New(rand.NewPCG(3, 4))
	a := make([]int, 20)
	for i := range a {
		a[i] = 3 + rng.IntN(cfg.Vocab-3)
	}
	with := func(p []int, last int) []int { return append(append([]int(nil), p...), last) }
	variants := [][]int{
		a,                                    // the same prompt
		a[:len(a)-1],                         // one shorter
		with(a, 7),                           // one longer
		with(a[:len(a)-1], a[19]%50+1),       // the last token differs
		append([]int{a[0]%40 + 1}, a[1:]...), // the first token differs
		a[:9],                                // a short prefix
	}
	var specs []callSpec
	for i, pl := range []bool{false, true} {
		p := SamplingParams{MaxTokens: 6, Temperature: 1, Seed: int64(i), PromptLogprobs: pl}
		specs = append(specs, callSpec{prompt: a, n: 2, p: p, ver: 1, at: 0})
		for _, v := range variants {
			specs = append(specs, callSpec{prompt: v, n: 2, p: p, ver: 1, at: 3})
		}
	}
	for i := range specs {
		specs[i].p.PromptLogprobs = i%2 == 0 // both orders of leader and follower
	}
	opts := SamplerOptions{PrefillChunk: 8}
	want := alone(t, base, opts, ads, specs)
	s, vers := samplerWith(t, base, opts, ads)
	got := schedule(t, s, vers, specs, nil, nil)
	require.NoError(t, s.Close())
	for i := range specs {
		require.NoError(t, got[i].Err)
		assert.Equal(t, want[i], got[i], "call %d (prompt of %d tokens, prompt log-probs %v)", i, len(specs[i].prompt), specs[i].p.PromptLogprobs)
	}
	st := s.Stats()
	assert.Positive(t, st.SharedRows)
	t.Logf("%d prompt rows computed, %d shared", st.PrefillRows, st.SharedRows)
}

// TestProductRowsBatchInvariantAB: the same for x·V (V not transposed, as
// attention's probabilities times values), whose route depends on the
// width of V only.
func TestProductRowsBatchInvariantAB(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, sh := range [][2]int{{32, 17}, {128, 40}, {12, 9}, {8, 300}, {64, 600}} {
		n, k := sh[0], sh[1]
		ld := n + 3 // values are rows of a wider cache
		x, v := make([]float32, batchRows*k), make([]float32, k*ld)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		one := make([]float32, batchRows*n)
		for r := range batchRows {
			gemm(par{}, false, false, 1, n, k, 1, x[r*k:(r+1)*k], k, v, ld, 0, one[r*n:(r+1)*n], n)
		}
		for m := 2; m <= batchRows; m++ {
			for lo := 0; lo+m <= batchRows; lo += m {
				y := make([]float32, m*n)
				gemm(par{threads: 2}, false, false, m, n, k, 1, x[lo*k:(lo+m)*k], k, v, ld, 0, y, n)
				require.Equal(t, one[lo*n:(lo+m)*n], y, "shape %dx%d, rows %d..%d", n, k, lo, lo+m)
			}
		}
	}
}

// TestSamplesIndependentOfN: sample i of a call does not depend on how many
// samples the call draws, with more samples than one product block (so
// every step's products and attention span several blocks).
func TestSamplesIndependentOfN(t *testing.T) {
	t.Parallel()
	for _, hf := range []bool{false, true} {
		cfg := smallConfig()
		if hf {
			cfg = qwenLikeConfig()
		}
		base, ads := modelAndAdapters[float32](t, cfg, hf)
		s, vers := samplerWith(t, base, SamplerOptions{Threads: 2}, ads)
		prompt := []int{1, 5, 9, 14, 3, 27, 8}
		p := SamplingParams{MaxTokens: 12, Temperature: 1, Seed: 7, PromptLogprobs: true}
		many, plpMany, err := s.SampleWith(context.Background(), vers[1], prompt, 3*batchRows+5, p)
		require.NoError(t, err)
		for _, n := range []int{1, batchRows - 1, batchRows + 2} {
			few, plp, err := s.SampleWith(context.Background(), vers[1], prompt, n, p)
			require.NoError(t, err)
			assert.Equal(t, many[:n], few, "hf %v, n %d", hf, n)
			assert.Equal(t, plpMany, plp)
		}
		require.NoError(t, s.Close())
	}
}
