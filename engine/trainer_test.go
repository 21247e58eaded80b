package engine

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine/safetensors"
)

func textExample(t *testing.T, s string) Example {
	t.Helper()
	toks, err := Tokenizer{}.Encode(s)
	require.NoError(t, err)
	seq := append([]int{BOS}, toks...)
	return Example{Input: seq[:len(seq)-1], Targets: seq[1:]}
}

func TestBaseFrozenDuringLoraTraining(t *testing.T) {
	t.Parallel()
	base, err := NewModel[float32](smallConfig(), 2)
	require.NoError(t, err)
	tr, err := NewTrainer(base, DefaultLoraConfig(), TrainerOptions{Threads: 2})
	require.NoError(t, err)
	before := tr.Model()
	adBefore := tr.Adapter()
	data := []Example{textExample(t, "What is 12 + 35? 47\n")}
	for range 3 {
		_, err := tr.ForwardBackward(context.Background(), data, LossSpec{Name: CrossEntropy})
		require.NoError(t, err)
		_, err = tr.OptimStep(AdamParams{LearningRate: 1e-2, WeightDecay: 0.1})
		require.NoError(t, err)
	}
	after := tr.Model()
	bt, at := before.tensors(), after.tensors()
	for i := range bt {
		for j := range bt[i].Data {
			require.Equal(t, math.Float32bits(bt[i].Data[j]), math.Float32bits(at[i].Data[j]), "%s[%d] changed", bt[i].Name, j)
		}
	}
	assert.NotEqual(t, adBefore.Blocks[0].Q.B, tr.Adapter().Blocks[0].Q.B, "the adapter did train")
	assert.Equal(t, 3, tr.Step())
}

func TestOverfitOneSequence(t *testing.T) {
	t.Parallel()
	base, err := NewModel[float32](smallConfig(), 4)
	require.NoError(t, err)
	tr, err := NewTrainer(base, DefaultLoraConfig(), TrainerOptions{Threads: 2})
	require.NoError(t, err)
	data := []Example{textExample(t, "What is 12 + 35? 47\n")}
	loss := func() float64 {
		out, err := tr.Forward(context.Background(), data, LossSpec{Name: CrossEntropy})
		require.NoError(t, err)
		return out.Metrics["loss:sum"] / out.Metrics["tokens:sum"]
	}
	first := loss()
	assert.InDelta(t, math.Log(VocabSize), first, 0.2, "a fresh model is near uniform")
	for range 60 {
		_, err := tr.ForwardBackward(context.Background(), data, LossSpec{Name: CrossEntropy})
		require.NoError(t, err)
		_, err = tr.OptimStep(AdamParams{LearningRate: 5e-3})
		require.NoError(t, err)
	}
	last := loss()
	t.Logf("per-token cross-entropy %.3f → %.3f", first, last)
	assert.Less(t, last, first/20)
}

func TestFullParameterTraining(t *testing.T) {
	t.Parallel()
	base, err := NewModel[float32](smallConfig(), 4)
	require.NoError(t, err)
	tr, err := NewTrainer(base, LoraConfig{}, TrainerOptions{Threads: 2, Full: true})
	require.NoError(t, err)
	assert.Equal(t, base.NumParams(), tr.NumTrainable())
	assert.Nil(t, tr.Adapter())
	data := []Example{textExample(t, "What is 12 + 35? 47\n")}
	var first, last float64
	for i := range 30 {
		out, err := tr.ForwardBackward(context.Background(), data, LossSpec{Name: CrossEntropy})
		require.NoError(t, err)
		if i == 0 {
			first = out.Metrics["loss:sum"]
		}
		last = out.Metrics["loss:sum"]
		_, err = tr.OptimStep(AdamParams{LearningRate: 1e-2})
		require.NoError(t, err)
	}
	t.Logf("full-parameter loss %.2f → %.2f", first, last)
	assert.Less(t, last, first/4)
	assert.NotEqual(t, base.Embed, tr.Model().Embed, "embedding trained")
	assert.NotEqual(t, base.FinalNorm, tr.Model().FinalNorm, "norms trained")
	assert.Error(t, tr.SaveAdapter(t.TempDir()), "no adapter in full mode")
}

func TestForwardBackwardHonoursContext(t *testing.T) {
	t.Parallel()
	base, err := NewModel[float32](smallConfig(), 4)
	require.NoError(t, err)
	tr, err := NewTrainer(base, DefaultLoraConfig(), TrainerOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = tr.ForwardBackward(ctx, []Example{textExample(t, "hi")}, LossSpec{Name: CrossEntropy})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestAdamMatchesNaiveReference(t *testing.T) {
	t.Parallel()
	tr := newTestTrainer(t, DefaultLoraConfig(), false)
	data := randomExamples(rand.New(rand.NewPCG(2, 2)), 2, 6, tinyConfig().Vocab)
	params := []AdamParams{
		{LearningRate: 1e-2, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.1},
		{LearningRate: 5e-3, GradClipNorm: 0.01}, // clipping active
		{},                                       // all defaults
	}
	// Reference state: flat copies of weights, m, v.
	var w, m, v [][]float64
	for _, p := range tr.ps {
		w = append(w, append([]float64{}, p.w...))
		m = append(m, make([]float64, len(p.w)))
		v = append(v, make([]float64, len(p.w)))
	}
	for step, ap := range params {
		_, err := tr.ForwardBackward(context.Background(), data, LossSpec{Name: CrossEntropy})
		require.NoError(t, err)
		var g [][]float64
		norm := 0.0
		for _, p := range tr.ps {
			g = append(g, append([]float64{}, p.g...))
			for _, x := range p.g {
				norm += x * x
			}
		}
		norm = math.Sqrt(norm)
		d := ap.WithDefaults()
		clip := 1.0
		if d.GradClipNorm > 0 && norm > d.GradClipNorm {
			clip = d.GradClipNorm / norm
		}
		tstep := float64(step + 1)
		for i := range w {
			for j := range w[i] {
				gj := g[i][j] * clip
				m[i][j] = d.Beta1*m[i][j] + (1-d.Beta1)*gj
				v[i][j] = d.Beta2*v[i][j] + (1-d.Beta2)*gj*gj
				mh := m[i][j] / (1 - math.Pow(d.Beta1, tstep))
				vh := v[i][j] / (1 - math.Pow(d.Beta2, tstep))
				w[i][j] -= d.LearningRate * (mh/(math.Sqrt(vh)+d.Eps) + d.WeightDecay*w[i][j])
			}
		}
		met, err := tr.OptimStep(ap)
		require.NoError(t, err)
		assert.InDelta(t, norm, met["grad_norm"], 1e-12)
		for i, p := range tr.ps {
			for j := range p.w {
				require.InDelta(t, w[i][j], p.w[j], 1e-12, "step %d %s[%d]", step, p.name, j)
				require.Zero(t, p.g[j], "gradients cleared")
			}
		}
	}
}

func TestTrainerDeterministicAcrossThreads(t *testing.T) {
	t.Parallel()
	base, err := NewModel[float32](smallConfig(), 6)
	require.NoError(t, err)
	data := randomExamples(rand.New(rand.NewPCG(6, 6)), 5, 30, VocabSize)
	run := func(threads, maxBatch int) (*Adapter[float32], Output) {
		tr, err := NewTrainer(base, DefaultLoraConfig(), TrainerOptions{Threads: threads, MaxBatchTokens: maxBatch})
		require.NoError(t, err)
		var out Output
		for range 2 {
			out, err = tr.ForwardBackward(context.Background(), data, LossSpec{Name: CrossEntropy})
			require.NoError(t, err)
			_, err = tr.OptimStep(AdamParams{LearningRate: 1e-3})
			require.NoError(t, err)
		}
		return tr.Adapter(), out
	}
	a1, o1 := run(1, 0)
	a3, o3 := run(3, 0)
	assert.Equal(t, a1, a3, "bit-identical adapters for 1 and 3 threads")
	assert.Equal(t, o1, o3)
	_, o4 := run(2, 40) // micro-batches of ≤40 tokens: same log-probs
	for i := range o1.Logprobs {
		for j := range o1.Logprobs[i] {
			assert.InDelta(t, o1.Logprobs[i][j], o4.Logprobs[i][j], 1e-5)
		}
	}
}

func TestBaseLogprobsIgnoreAdapter(t *testing.T) {
	t.Parallel()
	base, ad := trainedAdapter[float64](t, smallConfig())
	tr, err := NewTrainer(base, ad.Lora, TrainerOptions{})
	require.NoError(t, err)
	tr.ad = ad
	tr.buildParams()
	plain, err := NewTrainer(base, ad.Lora, TrainerOptions{}) // fresh adapter = base
	require.NoError(t, err)
	data := []Example{textExample(t, "What is 1 + 2? 3\n")}
	got, err := tr.BaseLogprobs(context.Background(), data)
	require.NoError(t, err)
	want, err := plain.Forward(context.Background(), data, LossSpec{Name: CrossEntropy})
	require.NoError(t, err)
	adapted, err := tr.Forward(context.Background(), data, LossSpec{Name: CrossEntropy})
	require.NoError(t, err)
	assert.Equal(t, want.Logprobs, got)
	assert.NotEqual(t, adapted.Logprobs, got)
}

func TestSaveLoadRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base, err := NewModel[float32](smallConfig(), 7)
	require.NoError(t, err)
	dir := t.TempDir()
	// Base weights.
	require.NoError(t, SaveBase(filepath.Join(dir, "base.safetensors"), base, "F32"))
	loaded, err := LoadBase[float32](filepath.Join(dir, "base.safetensors"))
	require.NoError(t, err)
	assert.Equal(t, base, loaded)
	// A trainer with some steps.
	data := []Example{textExample(t, "What is 3 + 4? 7\n"), textExample(t, "What is 10 + 20? 30\n")}
	tr, err := NewTrainer(base, LoraConfig{Rank: 4, Seed: 3, TrainAttn: true, TrainUnembed: true}, TrainerOptions{Threads: 2})
	require.NoError(t, err)
	step := func(tr *Trainer[float32]) Output {
		out, err := tr.ForwardBackward(ctx, data, LossSpec{Name: CrossEntropy})
		require.NoError(t, err)
		_, err = tr.OptimStep(AdamParams{LearningRate: 1e-2, WeightDecay: 0.01})
		require.NoError(t, err)
		return out
	}
	step(tr)
	step(tr)
	state := filepath.Join(dir, "state")
	require.NoError(t, tr.SaveState(state))
	for _, f := range []string{AdapterConfigFile, AdapterWeightsFile, stateFile} {
		assert.FileExists(t, filepath.Join(state, f))
	}
	// Resume into a differently configured trainer: identical next steps.
	tr2, err := NewTrainer(loaded, DefaultLoraConfig(), TrainerOptions{Threads: 1})
	require.NoError(t, err)
	require.NoError(t, tr2.LoadState(state, true))
	assert.Equal(t, tr.Step(), tr2.Step())
	assert.Equal(t, tr.Adapter(), tr2.Adapter())
	assert.Equal(t, step(tr), step(tr2))
	assert.Equal(t, tr.Adapter(), tr2.Adapter(), "optimizer state resumed exactly")
	// Without the optimizer the moments restart.
	tr3, err := NewTrainer(loaded, DefaultLoraConfig(), TrainerOptions{})
	require.NoError(t, err)
	require.NoError(t, tr3.LoadState(state, false))
	assert.Equal(t, 0, tr3.Step())
	// Adapter folder → sampler gives the trainer's log-probs.
	adDir := filepath.Join(dir, "adapter")
	require.NoError(t, tr.SaveAdapter(adDir))
	s, err := NewSampler(base, SamplerOptions{})
	require.NoError(t, err)
	require.NoError(t, s.LoadAdapter(adDir))
	assert.Equal(t, tr.Adapter(), s.Adapter())
	seq := append(append([]int{}, data[0].Input...), data[0].Targets[len(data[0].Targets)-1])
	slp, err := s.ComputeLogprobs(ctx, seq)
	require.NoError(t, err)
	out, err := tr.Forward(ctx, data[:1], LossSpec{Name: CrossEntropy})
	require.NoError(t, err)
	for i, lp := range out.Logprobs[0] {
		assert.InDelta(t, lp, slp[i+1], 1e-4)
	}
	// Full-parameter state round trip.
	ft, err := NewTrainer(base, LoraConfig{}, TrainerOptions{Full: true})
	require.NoError(t, err)
	step(ft)
	fdir := filepath.Join(dir, "full")
	require.NoError(t, ft.SaveState(fdir))
	ft2, err := NewTrainer(base, LoraConfig{}, TrainerOptions{Full: true})
	require.NoError(t, err)
	require.NoError(t, ft2.LoadState(fdir, true))
	assert.Equal(t, step(ft), step(ft2))
	assert.Equal(t, ft.Model(), ft2.Model())
}

func TestLoadRejectsMismatches(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := smallConfig()
	ad, err := NewAdapter[float32](cfg, DefaultLoraConfig())
	require.NoError(t, err)
	require.NoError(t, SaveAdapter(dir, ad, "tiny"))
	other := cfg
	other.Hidden = 64
	_, err = LoadAdapter[float32](dir, other)
	require.ErrorIs(t, err, ErrShape)
	assert.Contains(t, err.Error(), "mlp.gate_proj.lora_B.weight\" has shape [48 8]; the model needs [64 8]")

	// Truncated weights file.
	wpath := filepath.Join(dir, AdapterWeightsFile)
	b, err := os.ReadFile(wpath)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(wpath, b[:len(b)/2], 0o644))
	_, err = LoadAdapter[float32](dir, cfg)
	assert.ErrorContains(t, err, "truncated file?")

	// Config asking for half the attention group.
	require.NoError(t, os.WriteFile(filepath.Join(dir, AdapterConfigFile),
		[]byte(`{"peft_type":"LORA","r":8,"lora_alpha":32,"target_modules":["q_proj","v_proj"]}`), 0o644))
	_, err = LoadAdapter[float32](dir, cfg)
	assert.ErrorContains(t, err, "part of the attention group")

	// Base model whose tensors disagree with the config it claims.
	m, err := NewModel[float32](cfg, 1)
	require.NoError(t, err)
	p := filepath.Join(dir, "b.safetensors")
	require.NoError(t, SaveBase(p, m, "F16"))
	f, err := safetensors.ReadFile(p)
	require.NoError(t, err)
	f.Metadata[metaConfig] = strings.Replace(f.Metadata[metaConfig], `"dim":32`, `"dim":16`, 1)
	var ts []safetensors.Named
	for _, n := range f.Names() {
		ts = append(ts, safetensors.Named{Name: n, Tensor: f.Tensors[n]})
	}
	require.NoError(t, safetensors.WriteFile(p, ts, f.Metadata))
	_, err = LoadBase[float32](p)
	require.ErrorIs(t, err, ErrShape)
	assert.Contains(t, err.Error(), "model.embed_tokens.weight")
}

func TestTrainerRejectsBadInput(t *testing.T) {
	t.Parallel()
	base, err := NewModel[float32](smallConfig(), 1)
	require.NoError(t, err)
	tr, err := NewTrainer(base, DefaultLoraConfig(), TrainerOptions{})
	require.NoError(t, err)
	ok := func() Example { return Example{Input: []int{1, 2, 3}, Targets: []int{2, 3, 4}} }
	rl := func() Example {
		e := ok()
		e.Logprobs, e.Advantages = []float64{-1, -1, -1}, []float64{1, 0, -1}
		return e
	}
	cases := []struct {
		name string
		ex   Example
		loss LossName
		want string
	}{
		{"empty", Example{}, CrossEntropy, "input is empty"},
		{"token out of vocab", Example{Input: []int{1, VocabSize}, Targets: []int{1, 2}}, CrossEntropy, "outside the vocabulary"},
		{"target out of vocab", Example{Input: []int{1}, Targets: []int{-3}}, CrossEntropy, "target_tokens"},
		{"too long", Example{Input: make([]int, 41), Targets: make([]int, 41)}, CrossEntropy, "context is 40"},
		{"targets short", Example{Input: []int{1, 2}, Targets: []int{1}}, CrossEntropy, "target_tokens has 1"},
		{"nan weight", func() Example { e := ok(); e.Weights = []float64{1, math.NaN(), 1}; return e }(), CrossEntropy, "weights[1] is NaN"},
		{"weights short", func() Example { e := ok(); e.Weights = []float64{1}; return e }(), CrossEntropy, "weights has 1"},
		{"inf advantage", func() Example { e := rl(); e.Advantages[2] = math.Inf(1); return e }(), PPO, "advantages[2] is +Inf"},
		{"nan logprob", func() Example { e := rl(); e.Logprobs[0] = math.NaN(); return e }(), ImportanceSampling, "logprobs[0] is NaN"},
		{"missing advantages", func() Example { e := rl(); e.Advantages = nil; return e }(), DRO, "advantages has 0"},
		{"weights on rl loss", func() Example { e := rl(); e.Weights = []float64{1, 1, 1}; return e }(), CISPO, "weights given"},
	}
	for _, tc := range cases {
		first := ok()
		if tc.loss != CrossEntropy {
			first = rl()
		}
		_, err := tr.ForwardBackward(context.Background(), []Example{first, tc.ex}, LossSpec{Name: tc.loss})
		require.ErrorIs(t, err, ErrInput, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
		assert.Contains(t, err.Error(), "example 1", tc.name)
	}
	for _, p := range tr.ps {
		for _, g := range p.g {
			require.Zero(t, g, "a rejected call accumulates nothing")
		}
	}
	huge := rl()
	huge.Logprobs[1] = -1e6 // r = exp(p + 1e6) overflows
	_, err = tr.ForwardBackward(context.Background(), []Example{huge}, LossSpec{Name: ImportanceSampling})
	require.ErrorIs(t, err, ErrInput)
	assert.Contains(t, err.Error(), "example 0 token 1")
	_, err = tr.ForwardBackward(context.Background(), []Example{ok()}, LossSpec{Name: "mse"})
	assert.ErrorIs(t, err, ErrLoss)
	_, err = tr.ForwardBackward(context.Background(), []Example{rl()}, LossSpec{Name: PPO, Config: map[string]float64{"clip": 1}})
	assert.ErrorContains(t, err, `no config key "clip"`)
	_, err = tr.ForwardBackward(context.Background(), []Example{rl()}, LossSpec{Name: PPO, Config: map[string]float64{ClipLow: 1.5, ClipHigh: 1.2}})
	assert.ErrorIs(t, err, ErrLoss)
	_, err = tr.OptimStep(AdamParams{LearningRate: -1})
	assert.ErrorIs(t, err, ErrConfig)
}

func TestTokenizer(t *testing.T) {
	t.Parallel()
	var tok Tokenizer
	s := "What is 12 + 35? 47\n~ "
	ids, err := tok.Encode(s)
	require.NoError(t, err)
	assert.Len(t, ids, len(s))
	for _, id := range ids {
		assert.True(t, id >= 2 && id < VocabSize)
	}
	assert.Equal(t, s, tok.Decode(ids))
	assert.Equal(t, "ab", tok.Decode([]int{BOS, ids[0] + 'a' - 'W', EOS, ids[0] + 'b' - 'W'}))
	_, err = tok.Encode("naïve")
	var ee *EncodeError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 'ï', ee.Char)
	assert.Equal(t, 2, ee.Pos)
	assert.Contains(t, err.Error(), "'ï'")
	assert.Equal(t, "\uFFFD", tok.Decode([]int{VocabSize}))
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, DefaultConfig().Validate())
	p := DefaultConfig().Params()
	t.Logf("default config: %d parameters", p)
	assert.True(t, p > 1_000_000 && p < 2_000_000)
	m, err := NewModel[float32](DefaultConfig(), 1)
	require.NoError(t, err)
	assert.Equal(t, p, m.NumParams())
	bad := DefaultConfig()
	bad.Heads = 3
	assert.ErrorIs(t, bad.Validate(), ErrConfig)
	bad = DefaultConfig()
	bad.Heads = 128 // head width 1: odd
	assert.ErrorContains(t, bad.Validate(), "even")
	assert.ErrorContains(t, LoraConfig{Rank: 4}.Validate(), "trains nothing")
}
