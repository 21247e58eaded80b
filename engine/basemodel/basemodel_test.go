package basemodel

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/pretrain"
)

func TestShippedLoads(t *testing.T) {
	t.Parallel()
	m, err := Load()
	require.NoError(t, err)
	assert.Equal(t, engine.DefaultConfig(), m.Config)
	assert.Equal(t, engine.DefaultConfig().Params(), m.NumParams())
}

func TestShippedAnswers(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("samples 100 problems")
	}
	m, err := Load()
	require.NoError(t, err)
	acc, err := pretrain.Accuracy(context.Background(), m, pretrain.DefaultOptions().Seed, 100, 2)
	require.NoError(t, err)
	t.Logf("greedy accuracy of the shipped file on 100 held-out problems: %.2f", acc)
	assert.Greater(t, acc, 0.15, "the base model knows some arithmetic")
	assert.Less(t, acc, 0.9, "and leaves RL something to improve")

	s, err := engine.NewSampler(m, engine.SamplerOptions{})
	require.NoError(t, err)
	var tok engine.Tokenizer
	ids, err := tok.Encode("What is 12 + 35?")
	require.NoError(t, err)
	seqs, _, err := s.Sample(context.Background(), append([]int{engine.BOS}, ids...), 1,
		engine.SampleParams{MaxTokens: 6, StopTokens: []int{engine.Newline}})
	require.NoError(t, err)
	text := tok.Decode(seqs[0].Tokens)
	t.Logf("What is 12 + 35? →%q", text)
	var n int
	_, err = fmt.Sscanf(text, " %d\n", &n)
	assert.NoError(t, err, "answers with a number and a newline")
}

// TestShippedReproduces regenerates the shipped file from its recipe and
// compares bytes. It takes about ten minutes on two cores, so it runs only
// with TANDEM_REPRODUCE_BASE=1. With TANDEM_BASE_OUT=path it also writes the
// regenerated file there (to refresh the shipped file after a numeric
// change).
func TestShippedReproduces(t *testing.T) {
	if os.Getenv("TANDEM_REPRODUCE_BASE") != "1" {
		t.Skip("set TANDEM_REPRODUCE_BASE=1 to regenerate the base model (~10 min)")
	}
	o := pretrain.DefaultOptions()
	o.EvalN = -1 // skip evaluation
	o.Threads = 2
	m, rep, err := pretrain.Run(context.Background(), o, nil)
	require.NoError(t, err)
	t.Logf("final loss %.4f, kernels %s", rep.FinalLoss, rep.Kernels)
	path := filepath.Join(t.TempDir(), "arith.safetensors")
	if out := os.Getenv("TANDEM_BASE_OUT"); out != "" {
		path = out
	}
	require.NoError(t, engine.SaveBase(path, m, "BF16"))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(got, Bytes()), "regenerated file differs from the shipped one")
}
