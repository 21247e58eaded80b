package engine

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// trainedAdapter returns a base model and an adapter with random non-zero B,
// so the adapted model differs from the base.
func trainedAdapter[T Float](t *testing.T, cfg Config) (*Model[T], *Adapter[T]) {
	t.Helper()
	base, err := NewModel[T](cfg, 1)
	require.NoError(t, err)
	for _, nt := range base.tensors() {
		if len(nt.Shape) == 2 {
			for i := range nt.Data {
				nt.Data[i] *= 5 // a peakier model than the 0.02 init
			}
		}
	}
	ad, err := NewAdapter[T](cfg, DefaultLoraConfig())
	require.NoError(t, err)
	randomizeAdapter(ad, 3, 0.05)
	return base, ad
}

func smallConfig() Config {
	return Config{Vocab: VocabSize, Dim: 32, Layers: 2, Heads: 4, Hidden: 48, Context: 40}
}

func TestSampleSeedDeterminism(t *testing.T) {
	t.Parallel()
	base, ad := trainedAdapter[float32](t, smallConfig())
	s, err := NewSampler(base, SamplerOptions{Threads: 2})
	require.NoError(t, err)
	require.NoError(t, s.SetAdapter(ad))
	prompt := []int{BOS, 10, 20, 30}
	p := SamplingParams{MaxTokens: 12, Temperature: 1, Seed: 42}
	a, _, err := s.Sample(context.Background(), prompt, 4, p)
	require.NoError(t, err)
	b, _, err := s.Sample(context.Background(), prompt, 4, p)
	require.NoError(t, err)
	assert.Equal(t, a, b, "same seed, same tokens and logprobs")
	// Sample i does not depend on how many are drawn with it.
	one, _, err := s.Sample(context.Background(), prompt, 1, p)
	require.NoError(t, err)
	assert.Equal(t, a[0], one[0])
	// One thread gives the same bits.
	s1, err := NewSampler(base, SamplerOptions{Threads: 1})
	require.NoError(t, err)
	require.NoError(t, s1.SetAdapter(ad))
	c, _, err := s1.Sample(context.Background(), prompt, 4, p)
	require.NoError(t, err)
	assert.Equal(t, a, c, "thread count does not change results")
	p.Seed = 43
	d, _, err := s.Sample(context.Background(), prompt, 4, p)
	require.NoError(t, err)
	assert.NotEqual(t, a, d, "different seeds differ")
	assert.NotEqual(t, a[0].Tokens, a[1].Tokens, "samples of one call differ")
}

// checkCacheAgainstFull samples at temperature 1 and compares each sampled
// token's log-prob with a full forward pass over prompt+completion.
func checkCacheAgainstFull[T Float](t *testing.T, tol float64) {
	base, ad := trainedAdapter[T](t, smallConfig())
	s, err := NewSampler(base, SamplerOptions{Threads: 2})
	require.NoError(t, err)
	require.NoError(t, s.SetAdapter(ad))
	prompt := []int{BOS, 40, 41, 42, 43, 44}
	seqs, plp, err := s.Sample(context.Background(), prompt, 3, SamplingParams{MaxTokens: 20, Temperature: 1, Seed: 9, PromptLogprobs: true})
	require.NoError(t, err)
	worst := 0.0
	for _, sq := range seqs {
		require.Len(t, sq.Tokens, 20)
		assert.Equal(t, StopLength, sq.StopReason)
		full, err := s.ComputeLogprobs(context.Background(), append(append([]int{}, prompt...), sq.Tokens...))
		require.NoError(t, err)
		for i, lp := range plp {
			assert.InDelta(t, full[i], lp, tol, "prompt token %d", i)
		}
		for i, lp := range sq.Logprobs {
			d := math.Abs(full[len(prompt)+i] - lp)
			worst = math.Max(worst, d)
			assert.InDelta(t, full[len(prompt)+i], lp, tol, "token %d", i)
		}
	}
	t.Logf("max |cached − full| = %.3g", worst)
	// The trainer's unmerged adapter agrees with the sampler's merged one.
	tr, err := NewTrainer(base, ad.Lora, TrainerOptions{})
	require.NoError(t, err)
	tr.ad = ad.Clone()
	tr.buildParams()
	in := append(append([]int{}, prompt...), seqs[0].Tokens[:len(seqs[0].Tokens)-1]...)
	out, err := tr.Forward(context.Background(), []Example{{Input: in, Targets: append(append([]int{}, prompt[1:]...), seqs[0].Tokens...)}}, LossSpec{Name: CrossEntropy})
	require.NoError(t, err)
	for i, lp := range seqs[0].Logprobs {
		assert.InDelta(t, out.Logprobs[0][len(prompt)-1+i], lp, 50*tol, "trainer vs sampler, token %d", i)
	}
}

func TestSampleCacheMatchesFullForward(t *testing.T) {
	t.Parallel()
	t.Run("float32", func(t *testing.T) { t.Parallel(); checkCacheAgainstFull[float32](t, 1e-5) })
	t.Run("float64", func(t *testing.T) { t.Parallel(); checkCacheAgainstFull[float64](t, 1e-10) })
}

func TestSampleTruncatedLogprobs(t *testing.T) {
	t.Parallel()
	base, ad := trainedAdapter[float64](t, smallConfig())
	s, err := NewSampler(base, SamplerOptions{})
	require.NoError(t, err)
	require.NoError(t, s.SetAdapter(ad))
	prompt := []int{BOS, 50, 51}
	cases := []SamplingParams{
		{MaxTokens: 8, Temperature: 0.7, TopK: 5, Seed: 1},
		{MaxTokens: 8, Temperature: 1.3, TopP: 0.6, Seed: 2},
		{MaxTokens: 8, Temperature: 1, TopK: 10, TopP: 0.8, Seed: 3},
	}
	for _, p := range cases {
		seqs, _, err := s.Sample(context.Background(), prompt, 4, p)
		require.NoError(t, err)
		for _, sq := range seqs {
			ctx := append([]int{}, prompt...)
			for i, tok := range sq.Tokens {
				// Recompute the truncated distribution naively from the
				// full forward's logits at this position.
				want := naiveTruncatedLogprob(t, s, ctx, tok, p)
				assert.InDelta(t, want, sq.Logprobs[i], 1e-9, "%+v token %d", p, i)
				ctx = append(ctx, tok)
			}
		}
	}
}

// naiveTruncatedLogprob computes log π(tok | ctx) under temperature, top-k
// then top-p, with a plain sort over all probabilities.
func naiveTruncatedLogprob(t *testing.T, s *Sampler[float64], ctx []int, tok int, p SamplingParams) float64 {
	t.Helper()
	var a acts[float64]
	a.keepLast = true
	s.net().forward(&a, [][]int{ctx})
	v := s.Config().Vocab
	row := a.last
	type pr struct {
		id int
		p  float64
	}
	ps := make([]pr, v)
	z := 0.0
	for i, l := range row {
		ps[i] = pr{i, math.Exp(l / p.Temperature)}
		z += ps[i].p
	}
	for i := range ps {
		ps[i].p /= z
	}
	// selection sort, descending, ties by id
	for i := range ps {
		for j := i + 1; j < len(ps); j++ {
			if ps[j].p > ps[i].p {
				ps[i], ps[j] = ps[j], ps[i]
			}
		}
	}
	keep := v
	if p.TopK > 0 {
		keep = p.TopK
	}
	mass := 0.0
	for _, x := range ps[:keep] {
		mass += x.p
	}
	if p.TopP > 0 && p.TopP < 1 {
		acc := 0.0
		for j, x := range ps[:keep] {
			acc += x.p / mass
			if acc >= p.TopP {
				keep = j + 1
				break
			}
		}
	}
	mass = 0
	found := false
	for _, x := range ps[:keep] {
		mass += x.p
		found = found || x.id == tok
	}
	require.True(t, found, "sampled token %d is outside the kept set", tok)
	return math.Log(ps[indexOf(ps, tok, func(x pr) int { return x.id })].p / mass)
}

func indexOf[E any](xs []E, id int, key func(E) int) int {
	for i, x := range xs {
		if key(x) == id {
			return i
		}
	}
	return -1
}

func TestSampleGreedyAndStops(t *testing.T) {
	t.Parallel()
	base, ad := trainedAdapter[float32](t, smallConfig())
	s, err := NewSampler(base, SamplerOptions{})
	require.NoError(t, err)
	require.NoError(t, s.SetAdapter(ad))
	prompt := []int{BOS, 60}
	g, _, err := s.Sample(context.Background(), prompt, 3, SamplingParams{MaxTokens: 10, Seed: 1})
	require.NoError(t, err)
	assert.Equal(t, g[0], g[1], "greedy ignores the seed")
	// Stop at the 3rd greedy token, as a token and as a string.
	stop := g[0].Tokens[2]
	st, _, err := s.Sample(context.Background(), prompt, 1, SamplingParams{MaxTokens: 10, StopTokens: []int{stop}})
	require.NoError(t, err)
	first := indexOf(g[0].Tokens, stop, func(x int) int { return x })
	assert.Equal(t, g[0].Tokens[:first+1], st[0].Tokens)
	assert.Equal(t, StopStop, st[0].StopReason)
	text := Tokenizer{}.Decode(g[0].Tokens[first : first+1])
	if text != "" && text != "\uFFFD" {
		ss, _, err := s.Sample(context.Background(), prompt, 1, SamplingParams{MaxTokens: 10, StopStrings: []string{text}})
		require.NoError(t, err)
		assert.Equal(t, StopStop, ss[0].StopReason)
		assert.Equal(t, g[0].Tokens[:first+1], ss[0].Tokens)
	}
	// The context bounds generation.
	long := make([]int, smallConfig().Context-3)
	ls, _, err := s.Sample(context.Background(), long, 2, SamplingParams{MaxTokens: 10, Temperature: 1})
	require.NoError(t, err)
	assert.Len(t, ls[0].Tokens, 3)
	assert.Equal(t, StopLength, ls[0].StopReason)
}

func TestSamplerServesACopyOfTheAdapter(t *testing.T) {
	t.Parallel()
	base, ad := trainedAdapter[float32](t, smallConfig())
	s, err := NewSampler(base, SamplerOptions{})
	require.NoError(t, err)
	require.NoError(t, s.SetAdapter(ad))
	p := SamplingParams{MaxTokens: 6, Temperature: 1, Seed: 5}
	before, _, err := s.Sample(context.Background(), []int{BOS}, 2, p)
	require.NoError(t, err)
	randomizeAdapter(ad, 99, 1) // the caller's adapter changes
	after, _, err := s.Sample(context.Background(), []int{BOS}, 2, p)
	require.NoError(t, err)
	assert.Equal(t, before, after)
}

// TestOneSharedBase checks that a LoRA trainer and a sampler share the
// caller's base (no copy) and never write to it.
func TestOneSharedBase(t *testing.T) {
	t.Parallel()
	base, ad := trainedAdapter[float32](t, smallConfig())
	snapshot := base.Clone()
	s, err := NewSampler(base, SamplerOptions{Threads: 2})
	require.NoError(t, err)
	tr, err := NewTrainer(base, DefaultLoraConfig(), TrainerOptions{Threads: 2})
	require.NoError(t, err)
	assert.Same(t, base, s.base, "the sampler shares the base")
	assert.Same(t, base, tr.base, "the LoRA trainer shares the base")
	require.NoError(t, s.SetAdapter(ad))
	_, _, err = s.Sample(context.Background(), []int{BOS, 5, 6}, 3, SamplingParams{MaxTokens: 8, Temperature: 1, Seed: 1})
	require.NoError(t, err)
	data := []Example{textExample(t, "What is 1 + 2? 3\n")}
	for range 2 {
		_, err = tr.ForwardBackward(context.Background(), data, LossSpec{Name: CrossEntropy})
		require.NoError(t, err)
		_, err = tr.OptimStep(AdamParams{LearningRate: 1e-2})
		require.NoError(t, err)
	}
	assert.Equal(t, snapshot, base, "nobody wrote to the shared base")
	full, err := NewTrainer(base, LoraConfig{}, TrainerOptions{Full: true})
	require.NoError(t, err)
	assert.NotSame(t, base, full.base, "full-parameter training trains a private copy")
}

func TestSampleRejects(t *testing.T) {
	t.Parallel()
	base, _ := trainedAdapter[float32](t, smallConfig())
	s, err := NewSampler(base, SamplerOptions{})
	require.NoError(t, err)
	ok := SamplingParams{MaxTokens: 4, Temperature: 1}
	cases := []struct {
		name   string
		prompt []int
		n      int
		p      SamplingParams
		want   string
	}{
		{"empty prompt", nil, 1, ok, "prompt is empty"},
		{"out of vocab", []int{1, VocabSize}, 1, ok, "outside the vocabulary"},
		{"negative token", []int{-1}, 1, ok, "outside the vocabulary"},
		{"prompt fills context", make([]int, smallConfig().Context), 1, ok, "exceeds the model's context"},
		{"zero samples", []int{1}, 0, ok, "num_samples"},
		{"zero max tokens", []int{1}, 1, SamplingParams{}, "max_tokens"},
		{"nan temperature", []int{1}, 1, SamplingParams{MaxTokens: 1, Temperature: math.NaN()}, "temperature"},
		{"top_p above 1", []int{1}, 1, SamplingParams{MaxTokens: 1, TopP: 1.5}, "top_p"},
		{"bad stop token", []int{1}, 1, SamplingParams{MaxTokens: 1, StopTokens: []int{1000}}, "stop token"},
		{"empty stop string", []int{1}, 1, SamplingParams{MaxTokens: 1, StopStrings: []string{""}}, "stop string"},
	}
	for _, tc := range cases {
		_, _, err := s.Sample(context.Background(), tc.prompt, tc.n, tc.p)
		require.ErrorIs(t, err, ErrInput, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err = s.Sample(ctx, []int{1}, 1, ok)
	assert.ErrorIs(t, err, context.Canceled)
	_ = rand.Int
}

func TestSamplerConcurrentUse(t *testing.T) {
	t.Parallel()
	base, ad := trainedAdapter[float32](t, smallConfig())
	s, err := NewSampler(base, SamplerOptions{Threads: 1, MaxConcurrent: 3})
	require.NoError(t, err)
	p := SamplingParams{MaxTokens: 5, Temperature: 1, Seed: 3}
	want, _, err := s.Sample(context.Background(), []int{BOS, 5}, 2, p)
	require.NoError(t, err)
	done := make(chan error, 4)
	for g := range 4 {
		go func() {
			for range 5 {
				got, _, err := s.Sample(context.Background(), []int{BOS, 5}, 2, p)
				if err != nil {
					done <- err
					return
				}
				if g%2 == 0 && len(got) != 2 {
					done <- assert.AnError
					return
				}
			}
			done <- nil
		}()
	}
	for range 3 {
		require.NoError(t, s.SetAdapter(ad))
		require.NoError(t, s.SetAdapter(nil))
	}
	for range 4 {
		require.NoError(t, <-done)
	}
	got, _, err := s.Sample(context.Background(), []int{BOS, 5}, 2, p)
	require.NoError(t, err)
	assert.Equal(t, want, got, "back on the base, same results")
}

// Stop strings are matched against SamplerOptions.TokenText's text of each
// token (a Hugging Face tokenizer's), not the character vocabulary's.
func TestStopStringsUseTokenText(t *testing.T) {
	t.Parallel()
	base := hfModel[float64](t, qwenLikeConfig(), 5)
	text := func(id int) string { return fmt.Sprintf("<%d>", id) }
	s, err := NewSampler(base, SamplerOptions{TokenText: text})
	require.NoError(t, err)
	ctx := context.Background()
	prompt := []int{1, 2, 3}
	free, _, err := s.Sample(ctx, prompt, 1, SamplingParams{MaxTokens: 8, Temperature: 0})
	require.NoError(t, err)
	toks := free[0].Tokens
	require.Len(t, toks, 8)
	k := slices.Index(toks, toks[3]) // the first occurrence of the 4th token stops it
	stopped, _, err := s.Sample(ctx, prompt, 1, SamplingParams{MaxTokens: 8, Temperature: 0, StopStrings: []string{text(toks[3])}})
	require.NoError(t, err)
	assert.Equal(t, toks[:k+1], stopped[0].Tokens)
	assert.Equal(t, StopStop, stopped[0].StopReason)
}
