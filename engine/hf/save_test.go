package hf

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/safetensors"
	"github.com/tandemrl/tandem/tokenizer"
)

func TestSaveLoadShippedModel(t *testing.T) {
	t.Parallel()
	m, err := basemodel.Load()
	require.NoError(t, err)
	tj, tc := basemodel.TokenizerFiles()
	dir := filepath.Join(t.TempDir(), "tandem-base")
	require.NoError(t, Save(dir, m, SaveOptions{Name: "tandem/base", TokenizerJSON: tj, TokenizerConfigJSON: tc}))

	got, info, err := Load[float32](dir)
	require.NoError(t, err)
	assert.Equal(t, m.Config.Vocab, got.Config.Vocab)
	want := m.Config
	want.RopeTheta, want.NormEps = 10000, 1e-5 // written explicitly
	assert.Equal(t, want, got.Config)
	assert.Equal(t, &Info{Dir: dir, ModelType: "llama", Architecture: "LlamaForCausalLM", Name: "tandem/base",
		BOS: engine.BOS, EOS: []int{engine.EOS}, MaxPositions: m.Config.Context, DType: "float32",
		WeightDTypes: []safetensors.DType{safetensors.F32}, TokenizerPath: filepath.Join(dir, TokenizerFile),
		WeightFiles: []string{WeightsFile}}, info)
	a, b := m.Tensors(), got.Tensors()
	require.Equal(t, len(a), len(b))
	for i := range a {
		assert.Equal(t, a[i].Name, b[i].Name)
		assert.Equal(t, a[i].Shape, b[i].Shape)
		assert.Equal(t, a[i].Data, b[i].Data, a[i].Name)
	}

	// The folder's tokenizer is the shipped one, and the reloaded model
	// scores text exactly as the original.
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	ids := tok.Encode("12+34=46\n7*8=56\n", tokenizer.EncodeOptions{})
	require.Greater(t, len(ids), 10)
	ex := []engine.Example{{Input: ids[:len(ids)-1], Targets: ids[1:]}}
	lp := func(m *engine.Model[float32]) [][]float64 {
		tr, err := engine.NewTrainer(m, engine.DefaultLoraConfig(), engine.TrainerOptions{})
		require.NoError(t, err)
		out, err := tr.Forward(context.Background(), ex, engine.LossSpec{Name: engine.CrossEntropy})
		require.NoError(t, err)
		return out.Logprobs
	}
	assert.Equal(t, lp(m), lp(got))
}

func TestSaveLoadShapes(t *testing.T) {
	t.Parallel()
	cfgs := map[string]engine.Config{
		"gqa-headdim-tied-bias": {Vocab: 50, Dim: 24, Layers: 2, Heads: 4, KVHeads: 2, HeadDim: 8, Hidden: 40, Context: 64,
			RopeTheta: 5e5, NormEps: 1e-6, QKVBias: true, OBias: true, TiedEmbed: true,
			Rope: &engine.RopeScaling{Type: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 16}},
		"yarn": {Vocab: 30, Dim: 16, Layers: 1, Heads: 2, Hidden: 32, Context: 64, RopeTheta: 1e4, NormEps: 1e-5,
			Rope: &engine.RopeScaling{Type: "yarn", Factor: 4, OriginalContext: 16, AttentionFactor: 1.2, BetaFast: 32, BetaSlow: 1}},
	}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m, err := engine.NewModel[float64](cfg, 3)
			require.NoError(t, err)
			for _, dt := range []safetensors.DType{safetensors.F64, safetensors.BF16} {
				dir := filepath.Join(t.TempDir(), string(dt))
				require.NoError(t, Save(dir, m, SaveOptions{DType: dt, BOS: 3, EOS: []int{4, 5}}))
				got, info, err := Load[float64](dir)
				require.NoError(t, err)
				assert.Equal(t, cfg, got.Config)
				assert.Equal(t, []int{4, 5}, info.EOS)
				assert.Equal(t, 3, info.BOS)
				a, b := m.Tensors(), got.Tensors()
				for i := range a {
					for j, x := range a[i].Data {
						want := x
						if dt == safetensors.BF16 {
							enc, err := safetensors.EncodeFloats(dt, []float64{x})
							require.NoError(t, err)
							dec := make([]float64, 1)
							require.NoError(t, safetensors.DecodeFloats(dt, enc, dec))
							want = dec[0]
						}
						require.Equal(t, want, b[i].Data[j], "%s %s[%d]", dt, a[i].Name, j)
					}
				}
			}
		})
	}
}

func TestSaveRejects(t *testing.T) {
	t.Parallel()
	cfg := engine.Config{Vocab: 20, Dim: 8, Layers: 1, Heads: 2, Hidden: 8, Context: 16}
	for name, mod := range map[string]func(c *engine.Config){
		"qk norm":      func(c *engine.Config) { c.QKNorm = true },
		"qwen2 biases": func(c *engine.Config) { c.QKVBias = true },
	} {
		c := cfg
		mod(&c)
		m, err := engine.NewModel[float32](c, 1)
		require.NoError(t, err)
		assert.Error(t, Save(t.TempDir(), m, SaveOptions{}), name)
	}
	m, err := engine.NewModel[float32](cfg, 1)
	require.NoError(t, err)
	assert.ErrorContains(t, Save(t.TempDir(), m, SaveOptions{DType: safetensors.I64}), "want F32")
	assert.ErrorContains(t, Save(t.TempDir(), m, SaveOptions{EOS: []int{99}}), "outside the vocabulary")
	dir := t.TempDir()
	require.NoError(t, Save(dir, m, SaveOptions{}))
	_, err = os.Stat(filepath.Join(dir, TokenizerFile))
	assert.ErrorIs(t, err, os.ErrNotExist, "no tokenizer given, none written")
}
