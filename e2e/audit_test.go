package e2e

import (
	"context"
	"math"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/server/localbackend"
	"github.com/tandemrl/tandem/wire"
)

// The audits below check a run across processes against the embedded
// engine in this process exactly, call by call, where comparing two
// runs' reward curves could only bound their difference statistically:
// with max staleness 1 the sampled rollouts differ from the first step on,
// and two runs of one config end apart by up to about 0.27 in their last
// three steps' mean reward once in a few dozen runs (an unclipped
// importance-sampling loss on stale data), which is not a bug.

// sampleTolerance bounds |sampler − in-process| for a sampled token's
// log-prob: the sampler hosts run the same float32 engine, one token at a
// time on a KV cache where the audit scores the whole sequence at once
// (differences seen: under 1e-5). A token scored at the wrong version
// differs by about 0.03 on average after one optimizer step, and some
// tokens of a call by far more.
const sampleTolerance = 1e-4

// sampleLog is the loop's sampler in an audited run: it passes every call
// through and keeps each completed Sample (its prompt and a copy of its
// output) and each ref loaded.
type sampleLog struct {
	rl.Sampler

	mu    sync.Mutex
	calls []sampledCall
	refs  map[policy.Version]policy.Ref
}

type sampledCall struct {
	prompt []int
	out    rl.SampleOutput
}

func (s *sampleLog) Sample(ctx context.Context, prompt rl.ModelInput, n int, p rl.SamplingParams) (rl.SampleOutput, error) {
	out, err := s.Sampler.Sample(ctx, prompt, n, p)
	if err != nil {
		return out, err
	}
	c := sampledCall{prompt: prompt.AllTokens(), out: rl.SampleOutput{Version: out.Version, Replica: out.Replica}}
	for _, sq := range out.Sequences {
		c.out.Sequences = append(c.out.Sequences, rl.Sequence{
			Tokens: append([]int(nil), sq.Tokens...), Logprobs: append([]float64(nil), sq.Logprobs...)})
	}
	s.mu.Lock()
	s.calls = append(s.calls, c)
	s.mu.Unlock()
	return out, nil
}

func (s *sampleLog) Load(ctx context.Context, ref policy.Ref) error {
	s.mu.Lock()
	if s.refs == nil {
		s.refs = map[policy.Version]policy.Ref{}
	}
	s.refs[ref.Version] = ref
	s.mu.Unlock()
	return s.Sampler.Load(ctx, ref)
}

// audit scores every sampled sequence in this process on backend/local at
// the version its call reported, from that version's checkpoint in st (the
// base model for version 0), and checks each token's log-prob against the
// one the sampler returned: a replica that sampled from another version
// than it reported (after a restart, a retry, a load racing the call)
// fails here. It returns the tokens audited per replica.
func (s *sampleLog) audit(ctx context.Context, t *testing.T, st *checkpoint.Store) map[string]int {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	base, err := basemodel.Load()
	require.NoError(t, err)
	at := map[policy.Version]*local.Sampler{}
	defer func() {
		for _, smp := range at {
			smp.Close()
		}
	}()
	type acc struct {
		tokens       int
		sum, worst   float64
		worstVersion policy.Version
	}
	byReplica := map[string]*acc{}
	score := rl.SamplingParams{MaxTokens: 1, Temperature: 1, PromptLogprobs: true}
	for _, c := range s.calls {
		v := c.out.Version
		smp, ok := at[v]
		if !ok {
			smp, err = local.NewSampler(base, local.SamplerOptions{Store: st})
			require.NoError(t, err)
			at[v] = smp
			if v > 0 {
				ref, ok := s.refs[v]
				require.True(t, ok, "a call reports version %d, which the loop never loaded", v)
				require.NoError(t, smp.Load(ctx, ref), "version %d from the store", v)
			}
		}
		a := byReplica[c.out.Replica]
		if a == nil {
			a = &acc{}
			byReplica[c.out.Replica] = a
		}
		for _, sq := range c.out.Sequences {
			if len(sq.Tokens) == 0 {
				continue
			}
			require.Len(t, sq.Logprobs, len(sq.Tokens), "replica %s version %d", c.out.Replica, v)
			toks := append(append([]int(nil), c.prompt...), sq.Tokens...)
			ref, err := smp.Sample(ctx, rl.ModelInput{Chunks: []rl.Chunk{{Tokens: toks}}}, 1, score)
			require.NoError(t, err)
			require.Len(t, ref.PromptLogprobs, len(toks))
			for i, lp := range sq.Logprobs {
				d := math.Abs(lp - ref.PromptLogprobs[len(c.prompt)+i])
				if !(d <= a.worst) {
					a.worst, a.worstVersion = d, v
				}
				a.sum += d
				a.tokens++
			}
		}
	}
	names := make([]string, 0, len(byReplica))
	for name := range byReplica {
		names = append(names, name)
	}
	sort.Strings(names)
	tokens := map[string]int{}
	for _, name := range names {
		a := byReplica[name]
		tokens[name] = a.tokens
		label := "replica " + name
		if name == "" {
			label = "the sampler" // not a pool's replica
		}
		t.Logf("sample audit, %s: %d tokens over %d versions, |sampler − in process| mean %.1e, worst %.1e (version %d)",
			label, a.tokens, len(at), a.sum/float64(max(a.tokens, 1)), a.worst, a.worstVersion)
		assert.LessOrEqual(t, a.worst, sampleTolerance,
			"%s: a sampled token's log-prob is not the one of the version its call reported (version %d)", label, a.worstVersion)
	}
	return tokens
}

// replayTolerance bounds |trainer host − in-process replay| for a
// forward-backward's log-prob output. The replay gets the inputs the host
// got (float32 on the wire, see roundAsWire) and the host's outputs come
// back as float32, so the two differ by float32 rounding of values down to
// about −20 (about 1e-6; seen: under 5e-7). An optimizer step that differs
// (a parameter lost on the wire, a step applied twice or out of order)
// moves the next step's log-probs by far more.
const replayTolerance = 1e-5

// trainerLog is the loop's trainer in an audited run: it passes every call
// through and keeps the calls that change or read the adapter's training
// state, in submission order (the order the trainer applies them).
type trainerLog struct {
	rl.Trainer

	mu    sync.Mutex
	calls []trainerCall
}

// trainerCall is one ForwardBackward (fb set) or one OptimStep.
type trainerCall struct {
	fb   *rl.Future[rl.ForwardBackwardOutput]
	data []rl.Datum
	loss rl.Loss
	adam rl.AdamParams
}

func (l *trainerLog) ForwardBackward(ctx context.Context, data []rl.Datum, loss rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	c := trainerCall{data: roundAsWire(data), loss: rl.Loss{Name: loss.Name, Config: map[string]float64{}}}
	for k, v := range loss.Config {
		c.loss.Config[k] = v
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	c.fb = l.Trainer.ForwardBackward(ctx, data, loss)
	l.calls = append(l.calls, c)
	return c.fb
}

func (l *trainerLog) OptimStep(ctx context.Context, p rl.AdamParams) *rl.Future[rl.OptimStepOutput] {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.Trainer.OptimStep(ctx, p)
	l.calls = append(l.calls, trainerCall{adam: p})
	return f
}

// roundAsWire returns a deep copy of data (the caller may reuse its
// buffers) with the float32 loss inputs rounded to float32, as the Tinker
// wire carries them.
func roundAsWire(data []rl.Datum) []rl.Datum {
	out := make([]rl.Datum, len(data))
	for i, d := range data {
		out[i].ModelInput = rl.ModelInput{Chunks: []rl.Chunk{{Tokens: d.ModelInput.AllTokens()}}}
		out[i].LossFnInputs = make(map[string]rl.TensorData, len(d.LossFnInputs))
		for k, v := range d.LossFnInputs {
			v.Shape = append([]int(nil), v.Shape...)
			v.Ints = append([]int64(nil), v.Ints...)
			v.Floats = append([]float64(nil), v.Floats...)
			if v.DType == rl.Float32 {
				for j, x := range v.Floats {
					v.Floats[j] = float64(float32(x))
				}
			}
			out[i].LossFnInputs[k] = v
		}
	}
	return out
}

// replay applies the logged calls in order to a fresh backend/local
// trainer with adapter shape lora and checks each forward-backward's
// log-probs against the trainer host's: the host's trainer and the one in
// this process then held the same weights before every step. It returns
// the number of optimizer steps replayed.
func (l *trainerLog) replay(ctx context.Context, t *testing.T, lora wire.LoraConfig) int {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	base, err := basemodel.Load()
	require.NoError(t, err)
	cfg, err := localbackend.LoraConfig(lora)
	require.NoError(t, err)
	tr, err := local.NewTrainer(base, local.TrainerOptions{Run: "e2e-replay", Lora: cfg})
	require.NoError(t, err)
	defer tr.Close()
	steps, worst, worstStep, compared := 0, 0.0, 0, 0
	for _, c := range l.calls {
		if c.fb == nil {
			_, err := tr.OptimStep(ctx, c.adam).Wait(ctx)
			require.NoError(t, err, "replayed optimizer step %d", steps)
			steps++
			continue
		}
		want, err := c.fb.Wait(ctx)
		require.NoError(t, err, "the trainer host's forward-backward at step %d", steps)
		got, err := tr.ForwardBackward(ctx, c.data, c.loss).Wait(ctx)
		require.NoError(t, err, "replayed forward-backward at step %d", steps)
		require.Len(t, want.LossFnOutputs, len(c.data))
		require.Len(t, got.LossFnOutputs, len(c.data))
		for i := range c.data {
			w := want.LossFnOutputs[i][rl.InputLogprobs].Floats
			g := got.LossFnOutputs[i][rl.InputLogprobs].Floats
			require.Len(t, w, len(g), "step %d datum %d: log-probs of the host and of the replay", steps, i)
			for j := range w {
				if d := math.Abs(w[j] - g[j]); !(d <= worst) {
					worst, worstStep = d, steps
				}
				compared++
			}
		}
	}
	t.Logf("trainer replay: %d optimizer steps, %d log-probs compared, |trainer host − in process| worst %.1e (step %d)",
		steps, compared, worst, worstStep)
	assert.LessOrEqual(t, worst, replayTolerance,
		"the trainer host's log-probs at step %d are not those of the same calls in process", worstStep)
	return steps
}
