package localbackend

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/enginetest"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const baseName = "tiny"

func tinyBase(t *testing.T) *engine.Model[float32] {
	t.Helper()
	return enginetest.Model(t, 2, 32, 7)
}

func newBackend(t *testing.T, base *engine.Model[float32], st *checkpoint.Store) *Backend {
	t.Helper()
	b, err := New(Options{Bases: map[string]*engine.Model[float32]{baseName: base}, Store: st})
	require.NoError(t, err)
	return b
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	st, err := checkpoint.Open(t.TempDir())
	require.NoError(t, err)
	base := tinyBase(t)
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"no base", Options{Store: st}, "no base model"},
		{"nil weights", Options{Store: st, Bases: map[string]*engine.Model[float32]{"x": nil}}, `"x" has no weights`},
		{"no store", Options{Bases: map[string]*engine.Model[float32]{"x": base}}, "no checkpoint store"},
		{"negative threads", Options{Store: st, Bases: map[string]*engine.Model[float32]{"x": base}, SamplerThreads: -1}, "negative thread count"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.opts)
			require.ErrorIs(t, err, ErrConfig)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}

func TestUnknownBaseIsNamed(t *testing.T) {
	t.Parallel()
	st, err := checkpoint.Open(t.TempDir())
	require.NoError(t, err)
	b := newBackend(t, tinyBase(t), st)
	_, err = b.NewTrainer(context.Background(), server.TrainerSpec{Run: "r", Base: "llama", Lora: wire.DefaultLoraConfig()})
	require.ErrorIs(t, err, ErrUnknownBase)
	assert.Contains(t, err.Error(), `"llama"`)
	assert.Contains(t, err.Error(), baseName)
	_, err = b.NewSampler(context.Background(), "llama")
	require.ErrorIs(t, err, ErrUnknownBase)
}

func TestModelsDescribeBases(t *testing.T) {
	t.Parallel()
	st, err := checkpoint.Open(t.TempDir())
	require.NoError(t, err)
	base := tinyBase(t)
	b := newBackend(t, base, st)
	assert.Equal(t, []server.ModelSpec{{Name: baseName, MaxContextLength: base.Config.Context, VocabSize: base.Config.Vocab}}, b.Models())
}

func TestLoraConfig(t *testing.T) {
	t.Parallel()
	seed := int64(9)
	cases := []struct {
		name string
		in   wire.LoraConfig
		want engine.LoraConfig
		err  bool
	}{
		{"sdk default", wire.DefaultLoraConfig(), engine.LoraConfig{Rank: 32, TrainAttn: true, TrainMLP: true, TrainUnembed: true}, false},
		{"seed and parts", wire.LoraConfig{Rank: 4, Seed: &seed, TrainMLP: true}, engine.LoraConfig{Rank: 4, Seed: 9, TrainMLP: true}, false},
		{"zero rank", wire.LoraConfig{Rank: 0, TrainMLP: true}, engine.LoraConfig{}, true},
		{"nothing trained", wire.LoraConfig{Rank: 4}, engine.LoraConfig{}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := LoraConfig(c.in)
			if c.err {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "lora_config")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

// TestSamplerInAnotherProcessServesPublishedVersion trains one step with a
// backend's trainer, then loads the published version through a second
// backend sharing only the store folder (as a sampler process would): it
// must serve the same version and sample exactly what a sampler fed from the
// trainer's in-memory shelf samples.
func TestSamplerInAnotherProcessServesPublishedVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	root := t.TempDir()
	st, err := checkpoint.Open(root)
	require.NoError(t, err)
	base := tinyBase(t)
	trainerSide := newBackend(t, base, st)

	tr, err := trainerSide.NewTrainer(ctx, server.TrainerSpec{Run: "run1", Base: baseName, Lora: wire.LoraConfig{Rank: 4, TrainAttn: true, TrainMLP: true, TrainUnembed: true}})
	require.NoError(t, err)
	defer tr.(*local.Trainer).Close()
	ids, err := engine.Tokenizer{}.Encode("1+2=3")
	require.NoError(t, err)
	seq := append([]int{engine.BOS}, ids...)
	d := rl.Datum{ModelInput: rl.Tokens(seq[:len(seq)-1]), LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor(seq[1:])}}
	_, err = tr.ForwardBackward(ctx, []rl.Datum{d}, rl.Loss{Name: rl.CrossEntropy}).Wait(ctx)
	require.NoError(t, err)
	_, err = tr.OptimStep(ctx, rl.AdamParams{LearningRate: 0.05}).Wait(ctx)
	require.NoError(t, err)
	ref, err := tr.SaveForSampler(ctx, "v1").Wait(ctx)
	require.NoError(t, err)
	require.Equal(t, policy.Version(1), ref.Version)

	ck, err := st.Resolve(ref.URI)
	require.NoError(t, err, "save_weights_for_sampler must land in the store")
	require.NoError(t, ck.Verify(ctx))
	assert.FileExists(t, ck.Path(checkpoint.AdapterConfig))

	// The other process: its own store handle and shelf on the same folder.
	st2, err := checkpoint.Open(root)
	require.NoError(t, err)
	samplerSide := newBackend(t, base, st2)
	remote, err := samplerSide.NewSampler(ctx, baseName)
	require.NoError(t, err)
	require.NoError(t, remote.Load(ctx, policy.Ref{URI: ref.URI}))
	near, err := trainerSide.NewSampler(ctx, baseName)
	require.NoError(t, err)
	require.NoError(t, near.Load(ctx, ref))

	s := int64(3)
	p := rl.SamplingParams{MaxTokens: 8, Temperature: 1, Seed: &s}
	a, err := remote.Sample(ctx, rl.Tokens(seq[:4]), 4, p)
	require.NoError(t, err)
	b, err := near.Sample(ctx, rl.Tokens(seq[:4]), 4, p)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(1), a.Version, "the store's manifest gives the version, not the caller's ref")
	assert.Equal(t, b, a)

	// The base sampler (no adapter) samples something else under the same seed.
	plain, err := samplerSide.NewSampler(ctx, baseName)
	require.NoError(t, err)
	c, err := plain.Sample(ctx, rl.Tokens(seq[:4]), 4, p)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(0), c.Version)
	assert.NotEqual(t, a.Sequences, c.Sequences)
}

// TestSamplersDrawDistinctStreams: the samplers a server makes one after
// another (one per served version) must not replay each other's random
// draws when calls bring no seed, while a fixed Options.Seed reproduces
// the n-th sampler's stream.
func TestSamplersDrawDistinctStreams(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := checkpoint.Open(t.TempDir())
	require.NoError(t, err)
	base := tinyBase(t)
	mk := func(seed uint64) *Backend {
		b, err := New(Options{Bases: map[string]*engine.Model[float32]{baseName: base}, Store: st, Seed: seed})
		require.NoError(t, err)
		return b
	}
	draw := func(b *Backend) []rl.Sequence {
		s, err := b.NewSampler(ctx, baseName)
		require.NoError(t, err)
		out, err := s.Sample(ctx, rl.Tokens([]int{engine.BOS}), 4, rl.SamplingParams{MaxTokens: 6, Temperature: 1})
		require.NoError(t, err)
		return out.Sequences
	}
	b := mk(42)
	first, second := draw(b), draw(b)
	assert.NotEqual(t, first, second, "successive samplers replayed the same draws")
	again := mk(42)
	assert.Equal(t, first, draw(again), "the same seed reproduces the first sampler's draws")
	assert.Equal(t, second, draw(again))
}
