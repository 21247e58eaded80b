package basemodel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

func shippedRecipe(t *testing.T) Recipe {
	t.Helper()
	var r Recipe
	require.NoError(t, json.Unmarshal(ShippedRecipe(), &r))
	return r
}

func TestShippedWeightsMatchTheirRecipe(t *testing.T) {
	t.Parallel()
	r := shippedRecipe(t)
	sum := sha256.Sum256(Bytes())
	assert.Equal(t, r.SHA256, hex.EncodeToString(sum[:]), "the recipe names the shipped file's hash")
	assert.Equal(t, DefaultPretrainConfig(), r.Pretrain, "DefaultPretrainConfig is the shipped recipe")
	m, err := Load()
	require.NoError(t, err)
	assert.Equal(t, engine.DefaultConfig(), m.Config)
	assert.Equal(t, r.Params, m.NumParams())
	// Load returns independent copies.
	m2, err := Load()
	require.NoError(t, err)
	m2.Embed[0]++
	assert.NotEqual(t, m.Embed[0], m2.Embed[0])
}

// The base model knows addition (greedy decoding is mostly right) but its
// samples at temperature 1 often are not: what RL improves.
func TestShippedModelSkillAndGap(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("samples 100 problems twice")
	}
	m, err := Load()
	require.NoError(t, err)
	s, err := engine.NewSampler(m, engine.SamplerOptions{})
	require.NoError(t, err)
	_, held := arithmetic.Split()
	var tok engine.Tokenizer
	acc := func(temp float64) float64 {
		correct := 0
		for i, p := range held[:100] {
			ids, _ := tok.Encode(p.Prompt())
			seqs, _, err := s.Sample(context.Background(), append([]int{engine.BOS}, ids...), 1,
				engine.SamplingParams{MaxTokens: 24, Temperature: temp, Seed: int64(i), StopTokens: []int{engine.Newline}})
			require.NoError(t, err)
			if ok, _ := arithmetic.Grade(p, tok.Decode(seqs[0].Tokens)); ok {
				correct++
			}
		}
		return float64(correct) / 100
	}
	greedy, sampled := acc(0), acc(1)
	t.Logf("held-out accuracy on 100 problems: greedy %.2f, temperature 1 %.2f", greedy, sampled)
	assert.Greater(t, greedy, 0.85)
	assert.Less(t, sampled, 0.55)
	assert.Greater(t, sampled, 0.15)
}

// TestShippedReproduces reruns the whole pretraining (minutes on two cores)
// and compares the result with the shipped file, byte for byte. It runs only
// with TANDEM_REPRODUCE_BASE=1; TANDEM_BASE_OUT=path also keeps the result.
func TestShippedReproduces(t *testing.T) {
	if os.Getenv("TANDEM_REPRODUCE_BASE") != "1" {
		t.Skip("set TANDEM_REPRODUCE_BASE=1 to rerun the pretraining")
	}
	m, err := Pretrain(context.Background(), DefaultPretrainConfig(), runtime.NumCPU(), nil)
	require.NoError(t, err)
	out := os.Getenv("TANDEM_BASE_OUT")
	if out == "" {
		out = filepath.Join(t.TempDir(), "base.safetensors")
	}
	require.NoError(t, Save(out, m, Recipe{Name: Name}))
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	sum := sha256.Sum256(b)
	assert.Equal(t, shippedRecipe(t).SHA256, hex.EncodeToString(sum[:]))
}

func TestPretrainConfigValidation(t *testing.T) {
	t.Parallel()
	for _, mut := range []func(*PretrainConfig){
		func(c *PretrainConfig) { c.Steps = 0 },
		func(c *PretrainConfig) { c.Batch = 0 },
		func(c *PretrainConfig) { c.LR = -1 },
		func(c *PretrainConfig) { c.PromptWeight = 2 },
		func(c *PretrainConfig) { c.Corpus.CorrectProb = 1.5 },
		func(c *PretrainConfig) { c.Model.Heads = 3 },
	} {
		c := DefaultPretrainConfig()
		mut(&c)
		assert.Error(t, c.Validate())
	}
	c := DefaultPretrainConfig()
	assert.InDelta(t, c.LR/float64(c.Warmup), c.LearningRate(0), 1e-12)
	assert.InDelta(t, c.LR, c.LearningRate(c.Warmup), 1e-12)
	assert.InDelta(t, c.LR*c.MinLR, c.LearningRate(c.Steps), 1e-12)
}

// A few steps of pretraining are the same for 1 and 2 threads, bit for bit.
func TestPretrainDeterministicAcrossThreads(t *testing.T) {
	t.Parallel()
	cfg := DefaultPretrainConfig()
	cfg.Model = engine.Config{Vocab: engine.VocabSize, Dim: 32, Layers: 1, Heads: 2, Hidden: 64, Context: 48}
	cfg.Steps, cfg.Batch, cfg.Warmup = 3, 8, 1
	var losses [2][]float64
	var models [2]*engine.Model[float32]
	for i, th := range []int{1, 2} {
		m, err := Pretrain(context.Background(), cfg, th, func(r StepReport) { losses[i] = append(losses[i], r.Loss) })
		require.NoError(t, err)
		models[i] = m
	}
	assert.Equal(t, losses[0], losses[1])
	assert.Equal(t, models[0].Embed, models[1].Embed)
	assert.Equal(t, models[0].Unembed, models[1].Unembed)
}
