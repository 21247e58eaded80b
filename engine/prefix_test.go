package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// prefixConfig is tinyConfig with room for prompts and completions.
func prefixConfig() Config {
	return Config{Vocab: 13, Dim: 8, Layers: 2, Heads: 2, Hidden: 12, Context: 24}
}

func randomTokens(rng *rand.Rand, n, vocab int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = rng.IntN(vocab)
	}
	return out
}

// sharedBatch returns a batch of RL-like groups (one prompt, several
// completions) mixed with unshared examples, covering the layouts' edge
// cases: completions of length 0 (the prefix is the whole input) and 1, a
// group where every input is the prompt, a group whose prompt starts like
// the previous group's, one-token inputs. Targets are random.
func sharedBatch(rng *rand.Rand, vocab int) []Example {
	var inputs [][]int
	group := func(prompt []int, suffixLens ...int) {
		for _, l := range suffixLens {
			inputs = append(inputs, append(append([]int{}, prompt...), randomTokens(rng, l, vocab)...))
		}
	}
	pa := randomTokens(rng, 9, vocab)
	group(pa, 0, 1, 3, 6, 2)
	inputs = append(inputs, randomTokens(rng, 7, vocab))
	group(randomTokens(rng, 12, vocab), 0, 0, 0)
	pc := randomTokens(rng, 8, vocab)
	group(pc, 1+rng.IntN(5), 1+rng.IntN(5), 1+rng.IntN(5), 1+rng.IntN(5), 1+rng.IntN(5), 1+rng.IntN(5), 1+rng.IntN(5), 1+rng.IntN(5))
	pd := append(append([]int{}, pc[:8]...), randomTokens(rng, 6, vocab)...)
	group(pd, 1, 4, 2)
	inputs = append(inputs, randomTokens(rng, 1, vocab))
	group(randomTokens(rng, 10, vocab), 0, 3) // the first input is a prefix of the second
	group(randomTokens(rng, 3, vocab), 2, 2, 1)
	out := make([]Example, len(inputs))
	for i, in := range inputs {
		out[i] = Example{Input: in, Targets: randomTokens(rng, len(in), vocab)}
	}
	return out
}

// trainerPair returns two trainers with the same weights (adapter
// randomized, norms away from 1): the first computes every example in full,
// the second shares prefixes with the given options.
func trainerPair[T Float](t *testing.T, cfg Config, full bool, shared TrainerOptions) (plain, sh *Trainer[T]) {
	t.Helper()
	base, err := NewModel[T](cfg, 3)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(5, 5))
	for _, nt := range base.tensors() {
		for i := range nt.Data {
			if len(nt.Shape) == 1 {
				nt.Data[i] = T(0.5 + rng.Float64())
			} else {
				nt.Data[i] *= 10
			}
		}
	}
	lora := DefaultLoraConfig()
	if full {
		lora = LoraConfig{}
	}
	plain, err = NewTrainer(base, lora, TrainerOptions{Threads: 2, Full: full, NoPrefixSharing: true})
	require.NoError(t, err)
	shared.Full = full
	sh, err = NewTrainer(base, lora, shared)
	require.NoError(t, err)
	if !full {
		randomizeAdapter(plain.ad, 11, 0.3)
		randomizeAdapter(sh.ad, 11, 0.3)
	}
	return plain, sh
}

// withLossInputs fills each example's loss inputs for loss: weights for
// cross_entropy; for the RL losses sampler log-probs q = p − log r with r
// cycling through ratios inside and outside the clip ranges (away from the
// kinks) and advantages of both signs.
func withLossInputs[T Float](t *testing.T, tr *Trainer[T], data []Example, loss LossName) []Example {
	t.Helper()
	out, err := tr.Forward(context.Background(), data, LossSpec{Name: CrossEntropy})
	require.NoError(t, err)
	ratios := []float64{0.5, 0.95, 1.05, 1.5, 5, 0.85, 1.15}
	advs := []float64{1.3, -0.7, 0.4, -1.1, 0.9}
	res := make([]Example, len(data))
	k := 0
	for i, ex := range data {
		res[i] = Example{Input: ex.Input, Targets: ex.Targets}
		for _, p := range out.Logprobs[i] {
			if loss == CrossEntropy {
				res[i].Weights = append(res[i].Weights, 0.25+0.5*float64(k%4))
			} else {
				res[i].Logprobs = append(res[i].Logprobs, p-math.Log(ratios[k%len(ratios)]))
				res[i].Advantages = append(res[i].Advantages, advs[k%len(advs)])
			}
			k++
		}
	}
	return res
}

// relErr is |a − b| relative to max(|b|, 1).
func relErr(a, b float64) float64 { return math.Abs(a-b) / math.Max(math.Abs(b), 1) }

// gradErr is the largest element difference of two gradient tensors
// relative to the largest element of the reference b.
func gradErr[T Float](a, b []T) float64 {
	var diff, scale float64
	for i := range b {
		diff = math.Max(diff, math.Abs(float64(a[i])-float64(b[i])))
		scale = math.Max(scale, math.Abs(float64(b[i])))
	}
	if scale == 0 {
		return diff
	}
	return diff / scale
}

// compareShared runs ForwardBackward on both trainers and checks the loss,
// every log-prob and every gradient tensor agree within tol; it returns the
// largest relative error seen.
func compareShared[T Float](t *testing.T, plain, sh *Trainer[T], data []Example, loss LossSpec, tol float64) float64 {
	t.Helper()
	ctx := context.Background()
	plain.ZeroGrad()
	sh.ZeroGrad()
	want, err := plain.ForwardBackward(ctx, data, loss)
	require.NoError(t, err)
	got, err := sh.ForwardBackward(ctx, data, loss)
	require.NoError(t, err)
	worst := relErr(got.Metrics["loss:sum"], want.Metrics["loss:sum"])
	assert.Less(t, worst, tol, "loss:sum %v vs %v", got.Metrics["loss:sum"], want.Metrics["loss:sum"])
	assert.Equal(t, want.Metrics["tokens:sum"], got.Metrics["tokens:sum"])
	require.Len(t, got.Logprobs, len(data))
	for i := range data {
		require.Len(t, got.Logprobs[i], len(data[i].Input), "example %d", i)
		for j := range got.Logprobs[i] {
			e := relErr(got.Logprobs[i][j], want.Logprobs[i][j])
			worst = math.Max(worst, e)
			assert.Less(t, e, tol, "example %d token %d logprob", i, j)
		}
	}
	nonzero := 0
	for k := range plain.ps {
		e := gradErr(sh.ps[k].g, plain.ps[k].g)
		worst = math.Max(worst, e)
		assert.Less(t, e, tol, "gradient of %s", plain.ps[k].name)
		if gradErr(plain.ps[k].g, make([]T, len(plain.ps[k].g))) > 0 {
			nonzero++
		}
	}
	assert.Positive(t, nonzero, "some gradient is non-zero")
	// Forward alone agrees as well.
	fw, err := sh.Forward(ctx, data, loss)
	require.NoError(t, err)
	assert.Less(t, relErr(fw.Metrics["loss:sum"], want.Metrics["loss:sum"]), tol)
	return worst
}

func TestPrefixSharingMatchesUnshared(t *testing.T) {
	t.Parallel()
	losses := []LossSpec{
		{Name: CrossEntropy},
		{Name: ImportanceSampling},
		{Name: PPO},
		{Name: CISPO, Config: map[string]float64{ClipLow: 0.9, ClipHigh: 1.1}},
		{Name: DRO, Config: map[string]float64{Beta: 0.3}},
	}
	opts := []struct {
		name string
		o    TrainerOptions
	}{
		{"default", TrainerOptions{Threads: 2}},
		{"min2_microbatches", TrainerOptions{Threads: 3, MinSharedPrefix: 2, MaxBatchTokens: 20}},
	}
	for _, mode := range []string{"lora", "full"} {
		for _, op := range opts {
			for seed := uint64(1); seed <= 2; seed++ {
				name := fmt.Sprintf("%s/%s/seed%d", mode, op.name, seed)
				t.Run(name+"/float64", func(t *testing.T) {
					t.Parallel()
					checkShared[float64](t, mode == "full", op.o, seed, losses, 1e-9)
				})
				t.Run(name+"/float32", func(t *testing.T) {
					t.Parallel()
					checkShared[float32](t, mode == "full", op.o, seed, losses, 1e-4)
				})
			}
		}
	}
}

func checkShared[T Float](t *testing.T, full bool, o TrainerOptions, seed uint64, losses []LossSpec, tol float64) {
	plain, sh := trainerPair[T](t, prefixConfig(), full, o)
	data := sharedBatch(rand.New(rand.NewPCG(seed, 9)), prefixConfig().Vocab)
	// The batch must actually be shared, or the test compares a layout
	// with itself.
	inputs := make([][]int, len(data))
	total := 0
	for i := range data {
		inputs[i] = data[i].Input
		total += len(data[i].Input)
	}
	runs := sh.plan(inputs, sh.limit())
	rows, shared := 0, 0
	for _, r := range runs {
		rows += r.rows
		if r.hi-r.lo > 1 {
			shared++
		}
	}
	require.GreaterOrEqual(t, shared, 3, "runs %+v", runs)
	require.Less(t, rows, total*2/3)
	worst := 0.0
	for _, loss := range losses {
		d := withLossInputs(t, plain, data, loss.Name)
		worst = math.Max(worst, compareShared(t, plain, sh, d, loss, tol))
	}
	t.Logf("%d examples, %d tokens packed into %d rows (%d shared runs); max relative error %.1e", len(data), total, rows, shared, worst)
}

// TestPrefixSharingGradients checks the shared layout's gradients against
// finite differences directly.
func TestPrefixSharingGradients(t *testing.T) {
	t.Parallel()
	tr := newTestTrainer(t, DefaultLoraConfig(), false)
	tr.opts.MinSharedPrefix = 3
	rng := rand.New(rand.NewPCG(4, 4))
	prompt := randomTokens(rng, 5, tinyConfig().Vocab)
	var data []Example
	for _, l := range []int{0, 1, 4, 2} {
		in := append(append([]int{}, prompt...), randomTokens(rng, l, tinyConfig().Vocab)...)
		data = append(data, Example{Input: in, Targets: randomTokens(rng, len(in), tinyConfig().Vocab)})
	}
	data = append(data, randomExamples(rng, 2, 6, tinyConfig().Vocab)...)
	require.Len(t, tr.plan([][]int{data[0].Input, data[1].Input, data[2].Input, data[3].Input}, tr.limit()), 1)
	worst := gradCheck(t, tr, withLossInputs(t, tr, data, CrossEntropy), LossSpec{Name: CrossEntropy}, 6)
	for name, e := range worst {
		assert.Less(t, e, gradTol, name)
	}
	t.Logf("shared layout: max relative error %.2e over %d tensors", maxOf(worst), len(worst))
}

func TestPrefixSharingDeterministic(t *testing.T) {
	t.Parallel()
	var outs []Output
	var grads [][]float32
	data := sharedBatch(rand.New(rand.NewPCG(3, 3)), prefixConfig().Vocab)
	for _, threads := range []int{1, 4} {
		_, sh := trainerPair[float32](t, prefixConfig(), false, TrainerOptions{Threads: threads, MinSharedPrefix: 2})
		d := withLossInputs(t, sh, data, PPO)
		out, err := sh.ForwardBackward(context.Background(), d, LossSpec{Name: PPO})
		require.NoError(t, err)
		outs = append(outs, out)
		var g []float32
		for _, p := range sh.ps {
			g = append(g, p.g...)
		}
		grads = append(grads, g)
	}
	assert.Equal(t, math.Float64bits(outs[0].Metrics["loss:sum"]), math.Float64bits(outs[1].Metrics["loss:sum"]))
	assert.Equal(t, outs[0].Logprobs, outs[1].Logprobs)
	require.Len(t, grads[1], len(grads[0]))
	for i := range grads[0] {
		require.Equal(t, math.Float32bits(grads[0][i]), math.Float32bits(grads[1][i]), "gradient element %d", i)
	}
}

func TestBaseLogprobsShared(t *testing.T) {
	t.Parallel()
	plain, sh := trainerPair[float64](t, prefixConfig(), false, TrainerOptions{MinSharedPrefix: 2})
	data := sharedBatch(rand.New(rand.NewPCG(8, 8)), prefixConfig().Vocab)
	want, err := plain.BaseLogprobs(context.Background(), data)
	require.NoError(t, err)
	got, err := sh.BaseLogprobs(context.Background(), data)
	require.NoError(t, err)
	for i := range want {
		for j := range want[i] {
			assert.Less(t, relErr(got[i][j], want[i][j]), 1e-9, "example %d token %d", i, j)
		}
	}
}

func TestMinSharedPrefixValidated(t *testing.T) {
	t.Parallel()
	base, err := NewModel[float64](tinyConfig(), 1)
	require.NoError(t, err)
	_, err = NewTrainer(base, DefaultLoraConfig(), TrainerOptions{MinSharedPrefix: -1})
	require.ErrorIs(t, err, ErrConfig)
	assert.ErrorContains(t, err, "MinSharedPrefix -1")
}

// bruteForceRows is the fewest packed rows over every split of inputs into
// consecutive runs under planRuns's rules, by enumeration.
func bruteForceRows(inputs [][]int, minPrefix int, lim batchLimit) int {
	n := len(inputs)
	best := math.MaxInt
	for mask := 0; mask < 1<<(n-1); mask++ { // bit k set: a run ends after k
		total, lo, ok := 0, 0, true
		for k := 0; k < n && ok; k++ {
			if k < n-1 && mask&(1<<k) == 0 {
				continue
			}
			hi := k + 1
			sum, p := 0, len(inputs[lo])
			for e := lo; e < hi; e++ {
				sum += len(inputs[e])
				p = min(p, commonPrefix(inputs[lo], inputs[e]))
			}
			rows, size := sum-(hi-lo-1)*p, 0
			if hi-lo > 1 {
				// The span's query-key pairs as attention lays them out.
				brs := make([]branch, 0, hi-lo)
				for e := lo; e < hi; e++ {
					if n := len(inputs[e]) - p; n > 0 {
						brs = append(brs, branch{n: n})
					}
				}
				size = spanSize(p, brs)
			}
			if hi-lo > 1 && (p < minPrefix || !lim.fits(rows, size)) {
				ok = false
			}
			total += rows
			lo = hi
		}
		if ok {
			best = min(best, total)
		}
	}
	return best
}

func TestPlanRunsOptimalAndValid(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(12, 12))
	for trial := range 300 {
		n := 1 + rng.IntN(8)
		inputs := make([][]int, n)
		for i := range inputs {
			// A small alphabet and copied prefixes make long common prefixes likely.
			if i > 0 && rng.IntN(3) > 0 {
				keep := rng.IntN(len(inputs[i-1]) + 1)
				inputs[i] = append(append([]int{}, inputs[i-1][:keep]...), randomTokens(rng, rng.IntN(4), 2)...)
			} else {
				inputs[i] = randomTokens(rng, 1+rng.IntN(8), 2)
			}
			if len(inputs[i]) == 0 {
				inputs[i] = []int{1}
			}
		}
		minPrefix := 1 + rng.IntN(4)
		lim := rowsOnly(4 + rng.IntN(30))
		if trial%2 == 1 { // and a bound on activations, attention included
			lim.rowElems, lim.heads = 1+rng.IntN(3), 1+rng.IntN(2)
			lim.elems = lim.rowElems*(2+rng.IntN(20)) + lim.heads*rng.IntN(200)
		}
		runs := planRuns(inputs, minPrefix, lim)
		total, next := 0, 0
		for _, r := range runs {
			require.Equal(t, next, r.lo, "trial %d: runs are consecutive: %+v", trial, runs)
			require.Greater(t, r.hi, r.lo)
			rows := 0
			for e := r.lo; e < r.hi; e++ {
				require.Equal(t, inputs[r.lo][:r.plen], inputs[e][:r.plen], "trial %d: run %+v shares its prefix", trial, r)
				rows += len(inputs[e]) - r.plen
			}
			require.Equal(t, rows+r.plen, r.rows, "trial %d: run %+v", trial, r)
			if r.hi-r.lo > 1 {
				require.GreaterOrEqual(t, r.plen, minPrefix)
				require.LessOrEqual(t, r.rows, lim.rows)
				if lim.elems > 0 {
					require.LessOrEqual(t, r.rows*lim.rowElems+lim.heads*r.size(inputs), lim.elems, "trial %d: run %+v within %+v", trial, r, lim)
				}
			}
			total += r.rows
			next = r.hi
		}
		require.Equal(t, n, next)
		require.Equal(t, bruteForceRows(inputs, minPrefix, lim), total, "trial %d: %v min %d limit %+v → %+v", trial, inputs, minPrefix, lim, runs)
	}
}

func TestPlanRunsFindsGroups(t *testing.T) {
	t.Parallel()
	data := arithmeticGroups(t)
	inputs := make([][]int, len(data))
	total := 0
	for i := range data {
		inputs[i] = data[i].Input
		total += len(data[i].Input)
	}
	runs := planRuns(inputs, DefaultMinSharedPrefix, rowsOnly(4096))
	// Different prompts begin alike ("What is "), 9 tokens ≥ the minimum:
	// the plan still keeps each group's own, longer prompt.
	require.Len(t, runs, 16)
	rows := 0
	for g, r := range runs {
		assert.Equal(t, run{lo: 8 * g, hi: 8*g + 8, plen: r.plen, rows: r.rows}, r)
		assert.GreaterOrEqual(t, r.plen, 17, "group %d shares its prompt", g)
		rows += r.rows
	}
	t.Logf("%d tokens → %d rows", total, rows)
	assert.Len(t, singletonRuns(inputs), len(inputs))
	assert.Len(t, planRuns(inputs, 0, rowsOnly(4096)), len(inputs), "minPrefix 0: no sharing")
	assert.Len(t, planRuns(inputs[:1], 1, rowsOnly(4096)), 1)
	// One prompt, more completions than a run holds: split into full runs.
	big := make([][]int, 2*maxRunExamples+6)
	for i := range big {
		big[i] = append(append([]int{}, inputs[0][:17]...), i%10, 1)
	}
	runs = planRuns(big, DefaultMinSharedPrefix, rowsOnly(4096))
	require.Len(t, runs, 3)
	for _, r := range runs {
		assert.LessOrEqual(t, r.hi-r.lo, maxRunExamples)
		assert.Equal(t, 17, r.plen)
	}
}

// randomGroupBatch returns consecutive groups of random sizes sharing
// prompts of random lengths (some prompts extending the previous group's),
// mixed with unshared examples, all within prefixConfig's context.
func randomGroupBatch(rng *rand.Rand, vocab, context int) []Example {
	var inputs [][]int
	var prev []int
	for len(inputs) < 12 {
		if rng.IntN(4) == 0 {
			inputs = append(inputs, randomTokens(rng, 1+rng.IntN(context), vocab))
			continue
		}
		prompt := randomTokens(rng, 1+rng.IntN(context-4), vocab)
		if prev != nil && rng.IntN(3) == 0 {
			keep := rng.IntN(len(prev) + 1)
			prompt = append(append([]int{}, prev[:keep]...), prompt...)[:max(1, min(len(prompt)+keep, context-4))]
		}
		for range 1 + rng.IntN(6) {
			inputs = append(inputs, append(append([]int{}, prompt...), randomTokens(rng, rng.IntN(min(6, context-len(prompt))+1), vocab)...))
		}
		prev = prompt
	}
	out := make([]Example, len(inputs))
	for i, in := range inputs {
		out[i] = Example{Input: in, Targets: randomTokens(rng, len(in), vocab)}
	}
	return out
}

func TestPrefixSharingRandomBatches(t *testing.T) {
	t.Parallel()
	cfg := prefixConfig()
	losses := []LossSpec{{Name: CrossEntropy}, {Name: ImportanceSampling}, {Name: PPO}, {Name: CISPO}, {Name: DRO}}
	rng := rand.New(rand.NewPCG(21, 21))
	sharedRuns := 0
	for trial := range 24 {
		o := TrainerOptions{Threads: 1 + rng.IntN(3), MinSharedPrefix: 1 + rng.IntN(8)}
		if rng.IntN(2) == 0 {
			o.MaxBatchTokens = 8 + rng.IntN(60)
		}
		full := trial%4 == 3
		plain, sh := trainerPair[float64](t, cfg, full, o)
		data := randomGroupBatch(rng, cfg.Vocab, cfg.Context)
		for _, r := range sh.plan(inputsOf(data), sh.limit()) {
			if r.hi-r.lo > 1 {
				sharedRuns++
			}
		}
		loss := losses[trial%len(losses)]
		compareShared(t, plain, sh, withLossInputs(t, plain, data, loss.Name), loss, 1e-9)
		if t.Failed() {
			t.Fatalf("trial %d: options %+v full %v loss %s", trial, o, full, loss.Name)
		}
	}
	assert.Greater(t, sharedRuns, 24, "the batches share prefixes")
	t.Logf("%d shared runs over 24 batches", sharedRuns)
}

func inputsOf(data []Example) [][]int {
	out := make([][]int, len(data))
	for i := range data {
		out[i] = data[i].Input
	}
	return out
}

// Examples that share no prefix keep the unshared layout: same bits.
func TestPrefixSharingLeavesUnsharedBatchesAlone(t *testing.T) {
	t.Parallel()
	plain, sh := trainerPair[float32](t, prefixConfig(), false, TrainerOptions{Threads: 2})
	data := randomExamples(rand.New(rand.NewPCG(6, 6)), 12, 20, prefixConfig().Vocab)
	require.Len(t, sh.plan(inputsOf(data), sh.limit()), len(data), "random inputs share no 8-token prefix")
	want, err := plain.ForwardBackward(context.Background(), data, LossSpec{Name: CrossEntropy})
	require.NoError(t, err)
	got, err := sh.ForwardBackward(context.Background(), data, LossSpec{Name: CrossEntropy})
	require.NoError(t, err)
	assert.Equal(t, want, got)
	for k := range plain.ps {
		for i := range plain.ps[k].g {
			require.Equal(t, math.Float32bits(plain.ps[k].g[i]), math.Float32bits(sh.ps[k].g[i]), "%s[%d]", plain.ps[k].name, i)
		}
	}
}

// cachedElems returns the values layer 0 of a caches per row-sized buffer
// and in its attention probabilities, from the buffers' capacities.
func cachedElems[T Float](a *acts[T]) (rows, probs int) {
	v := reflect.ValueOf(&a.layers[0]).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case v.Type().Field(i).Name == "probs":
			probs = f.Cap()
		case f.Kind() == reflect.Slice:
			rows += f.Cap()
		case f.Kind() == reflect.Array:
			for j := range f.Len() {
				rows += f.Index(j).Cap()
			}
		}
	}
	return rows, probs
}

// TestActivationBudget checks activationElems against what a pass caches
// (so the budget counts every buffer), and that a call split by
// MaxActivationBytes gives the unsplit call's log-probs and gradients.
func TestActivationBudget(t *testing.T) {
	t.Parallel()
	cfg := Config{Vocab: 13, Dim: 8, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 6, Hidden: 12, Context: 40, QKNorm: true}
	for _, lora := range []LoraConfig{DefaultLoraConfig(), {Rank: 3, TrainAttn: true}} {
		base, err := NewModel[float64](cfg, 3)
		require.NoError(t, err)
		tr, err := NewTrainer(base, lora, TrainerOptions{})
		require.NoError(t, err)
		ex := randomExamples(rand.New(rand.NewPCG(2, 2)), 1, 17, cfg.Vocab)
		_, err = tr.ForwardBackward(context.Background(), ex, LossSpec{Name: CrossEntropy})
		require.NoError(t, err)
		n := len(ex[0].Input)
		rows, probs := cachedElems(&tr.a)
		lim := tr.limit()
		assert.Equal(t, n*lim.rowElems, rows, "rank %d: a row's cached values per layer", lora.Rank)
		assert.Equal(t, cfg.Heads*n*n, probs, "attention probabilities: heads × query-key pairs")
	}

	plain, sh := trainerPair[float64](t, prefixConfig(), false, TrainerOptions{Threads: 2})
	lim := plain.limit()
	// Room for about 20 rows of 16 keys each: the batch (≈ 60 rows packed)
	// takes several micro-batches and its shared runs are cut shorter.
	perLayer := 20 * (lim.rowElems + lim.heads*16)
	sh.opts.MaxActivationBytes = int64(perLayer * (prefixConfig().Layers + 1) * 8)
	data := sharedBatch(rand.New(rand.NewPCG(7, 9)), prefixConfig().Vocab)
	inputs := inputsOf(data)
	whole := 0
	for _, r := range plain.plan(inputs, plain.limit()) {
		whole += r.rows*lim.rowElems + lim.heads*r.size(inputs)
	}
	require.Greater(t, whole, 2*perLayer, "the batch needs splitting")
	sharedRuns := 0
	for _, r := range sh.plan(inputs, sh.limit()) {
		if r.hi-r.lo > 1 {
			sharedRuns++
			assert.LessOrEqual(t, r.rows*lim.rowElems+lim.heads*r.size(inputs), perLayer, "run %+v", r)
		}
	}
	require.Positive(t, sharedRuns, "prefixes are still shared within the budget")
	d := withLossInputs(t, plain, data, ImportanceSampling)
	worst := compareShared(t, plain, sh, d, LossSpec{Name: ImportanceSampling}, 1e-9)
	rows, probs := cachedElems(&sh.a)
	assert.LessOrEqual(t, rows, perLayer, "every micro-batch's row buffers within the bound")
	assert.LessOrEqual(t, probs, perLayer)
	t.Logf("budget %d values per layer (whole batch %d); largest micro-batch cached %d row values, %d probabilities; max relative error %.1e",
		perLayer, whole, rows, probs, worst)

	_, err := NewTrainer(plain.base, DefaultLoraConfig(), TrainerOptions{MaxActivationBytes: -1})
	require.ErrorIs(t, err, ErrConfig)
	assert.ErrorContains(t, err, "MaxActivationBytes -1")
}
