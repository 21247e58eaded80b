package local

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// gate is a TokenText that holds the engine's scheduler at the first
// token it is asked about (only calls with stop strings ask) until the
// test opens it: the test then knows the scheduler is mid-step and can
// queue calls, load versions or cancel calls before any more work runs.
type gate struct {
	once       sync.Once
	held, open chan struct{}
}

func newGate() *gate { return &gate{held: make(chan struct{}), open: make(chan struct{})} }

func (g *gate) text(id int) string {
	g.once.Do(func() {
		close(g.held)
		<-g.open
	})
	return engine.Tokenizer{}.Decode([]int{id})
}

func plainText(id int) string { return engine.Tokenizer{}.Decode([]int{id}) }

// never is a stop string no completion of the character model contains:
// it only makes the scheduler ask the gate for token texts.
const never = "\x00\x01"

// sampleCall is one Sample call of a test and its answer.
type sampleCall struct {
	prompt []int
	n      int
	p      rl.SamplingParams
	out    rl.SampleOutput
	err    error
}

// randomCalls draws count calls with different prompts, n, max_tokens,
// temperatures and seeds.
func randomCalls(rng *rand.Rand, count int) []*sampleCall {
	calls := make([]*sampleCall, count)
	for i := range calls {
		prompt := []int{engine.BOS}
		for range rng.IntN(12) {
			prompt = append(prompt, 3+rng.IntN(engine.VocabSize-3))
		}
		seed := rng.Int64N(1000)
		calls[i] = &sampleCall{prompt: prompt, n: 1 + rng.IntN(4), p: rl.SamplingParams{
			MaxTokens: 2 + rng.IntN(12), Temperature: []float64{0, 0.8, 1}[rng.IntN(3)], Seed: &seed,
			PromptLogprobs: rng.IntN(2) == 0,
		}}
		if rng.IntN(3) == 0 {
			calls[i].p.StopTokens = []int{3 + rng.IntN(engine.VocabSize-3)}
		}
	}
	return calls
}

// start runs c on s in a goroutine and returns a channel closed when it
// returns.
func start(ctx context.Context, s *Sampler, c *sampleCall) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.out, c.err = s.Sample(ctx, rl.Tokens(c.prompt), c.n, c.p)
	}()
	return done
}

// waitQueued spins until k calls wait in the scheduler (it is held at the
// gate, so they stay there).
func waitQueued(s *Sampler, k int) {
	for s.Stats().Waiting < k {
		runtime.Gosched()
	}
}

// aloneOn runs each call by itself on s and returns the answers.
func aloneOn(t *testing.T, s *Sampler, calls []*sampleCall) []rl.SampleOutput {
	t.Helper()
	outs := make([]rl.SampleOutput, len(calls))
	for i, c := range calls {
		var err error
		outs[i], err = s.Sample(context.Background(), rl.Tokens(c.prompt), c.n, c.p)
		require.NoError(t, err, "call %d alone", i)
	}
	return outs
}

// shelvedAdapter puts a random adapter on shelf as version v.
func shelvedAdapter(t *testing.T, base *engine.Model[float32], shelf *Shelf, v policy.Version) policy.Ref {
	t.Helper()
	ad, err := engine.NewAdapter[float32](base.Config, engine.DefaultLoraConfig())
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(uint64(v), 3))
	for i := range ad.Blocks {
		b := &ad.Blocks[i]
		for _, p := range []*engine.LoraPair[float32]{b.Q, b.K, b.V, b.O, b.Gate, b.Up, b.Down} {
			if p == nil {
				continue
			}
			for j := range p.B {
				p.B[j] = float32(rng.NormFloat64() * 0.5)
			}
		}
	}
	uri := fmt.Sprintf("tinker://t/sampler_weights/v%d", v)
	shelf.Put(uri, v, ad)
	return policy.Ref{URI: uri, Version: v, Kind: policy.SamplerWeights}
}

// TestLoadDuringBatchedDecoding queues calls on version 0 behind a held
// scheduler step, loads version 1, queues more calls, then lets them all
// decode together: every sample reports the version its call started on
// and equals that call alone on that version, so no sequence mixed
// versions; the calls batched (far fewer steps than alone).
func TestLoadDuringBatchedDecoding(t *testing.T) {
	ctx := context.Background()
	base := tinyBase(t)
	shelf := &Shelf{}
	g := newGate()
	s, err := NewSampler(base, SamplerOptions{Shelf: shelf, TokenText: g.text})
	require.NoError(t, err)
	ref := shelvedAdapter(t, base, shelf, 1)
	rng := rand.New(rand.NewPCG(1, 1))
	before, after := randomCalls(rng, 12), randomCalls(rng, 12)
	before[0].p.StopStrings, before[0].p.MaxTokens = []string{never}, 20

	var dones []<-chan struct{}
	dones = append(dones, start(ctx, s, before[0]))
	<-g.held // the scheduler is drawing before[0]'s first token
	for _, c := range before[1:] {
		dones = append(dones, start(ctx, s, c))
	}
	waitQueued(s, len(before)-1)
	require.NoError(t, s.Load(ctx, ref))
	assert.Equal(t, policy.Version(1), s.Version(), "a load is served at once, with calls in flight")
	for _, c := range after {
		dones = append(dones, start(ctx, s, c))
	}
	waitQueued(s, len(before)-1+len(after))
	close(g.open)
	for _, d := range dones {
		<-d
	}
	require.NoError(t, s.Close())
	st := s.Stats()

	ref0, err := NewSampler(base, SamplerOptions{Shelf: shelf, TokenText: plainText})
	require.NoError(t, err)
	want0 := aloneOn(t, ref0, before)
	require.NoError(t, ref0.Load(ctx, ref))
	want1 := aloneOn(t, ref0, after)
	for i, c := range before {
		require.NoError(t, c.err)
		assert.Equal(t, policy.Version(0), c.out.Version, "call %d started before the load", i)
		assert.Equal(t, want0[i], c.out, "call %d: batched differs from alone on version 0", i)
	}
	for i, c := range after {
		require.NoError(t, c.err)
		assert.Equal(t, policy.Version(1), c.out.Version, "call %d started after the load", i)
		assert.Equal(t, want1[i], c.out, "call %d: batched differs from alone on version 1", i)
	}
	assert.NotEqual(t, want0[1].Sequences, aloneOn(t, ref0, before[1:2])[0].Sequences, "the versions sample differently")
	assert.Less(t, st.Steps, uint64(40), "the 24 calls shared steps")
	t.Logf("24 calls in %d steps", st.Steps)
}

// TestCancelOneOfABatch cancels one call queued with others: it returns
// its context's error, the others answer exactly as alone, and (TestMain)
// no goroutine is left.
func TestCancelOneOfABatch(t *testing.T) {
	base := tinyBase(t)
	g := newGate()
	s, err := NewSampler(base, SamplerOptions{TokenText: g.text})
	require.NoError(t, err)
	calls := randomCalls(rand.New(rand.NewPCG(2, 2)), 10)
	calls[0].p.StopStrings = []string{never}
	ctx, cancel := context.WithCancel(context.Background())
	var dones []<-chan struct{}
	dones = append(dones, start(context.Background(), s, calls[0]))
	<-g.held
	for i, c := range calls[1:] {
		cctx := context.Background()
		if i == 4 {
			cctx = ctx
		}
		dones = append(dones, start(cctx, s, c))
	}
	waitQueued(s, len(calls)-1)
	cancel()
	<-dones[5]
	close(g.open)
	for _, d := range dones {
		<-d
	}
	assert.ErrorIs(t, calls[5].err, context.Canceled)
	ref, err := NewSampler(base, SamplerOptions{TokenText: plainText})
	require.NoError(t, err)
	for i, c := range calls {
		if i == 5 {
			continue
		}
		require.NoError(t, c.err, "call %d", i)
		assert.Equal(t, aloneOn(t, ref, []*sampleCall{c})[0], c.out, "call %d", i)
	}
	require.NoError(t, s.Close())
	st := s.Stats()
	assert.Equal(t, uint64(1), st.Abandoned)
	assert.Zero(t, st.KVReservedBytes)
	_, err = s.Sample(context.Background(), rl.Tokens([]int{engine.BOS}), 1, rl.SamplingParams{MaxTokens: 1})
	assert.ErrorIs(t, err, engine.ErrClosed)
}

// TestSerialSamplerStillAnswers: the serialized mode (kept for comparison)
// gives the same kind of answers and versions.
func TestSerialSamplerStillAnswers(t *testing.T) {
	ctx := context.Background()
	base := tinyBase(t)
	shelf := &Shelf{}
	s, err := NewSampler(base, SamplerOptions{Shelf: shelf, Serial: true})
	require.NoError(t, err)
	ref := shelvedAdapter(t, base, shelf, 2)
	require.NoError(t, s.Load(ctx, ref))
	seed := int64(4)
	out, err := s.Sample(ctx, rl.Tokens([]int{engine.BOS, 5}), 3, rl.SamplingParams{MaxTokens: 6, Temperature: 1, Seed: &seed})
	require.NoError(t, err)
	assert.Equal(t, policy.Version(2), out.Version)
	require.Len(t, out.Sequences, 3)
	for _, sq := range out.Sequences {
		assert.Len(t, sq.Tokens, 6)
	}
}
