package pretrain

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine"
)

func TestCorpusLines(t *testing.T) {
	t.Parallel()
	c := NewCorpus(1, 1, 0.5)
	var tok engine.Tokenizer
	wrong, ops := 0, map[byte]int{}
	const n = 2000
	for range n {
		p, line := c.Line()
		ops[p.Op]++
		require.True(t, strings.HasPrefix(line, p.Prompt()+" "), line)
		require.True(t, strings.HasSuffix(line, "\n"))
		_, err := tok.Encode(line)
		require.NoError(t, err)
		if line != p.Line(p.Answer) {
			wrong++
		}
		require.GreaterOrEqual(t, p.Answer, 0)
	}
	assert.InDelta(t, 0.5, float64(wrong)/n, 0.05, "noise rate")
	assert.InDelta(t, 0.5, float64(ops['+'])/n, 0.05)
	assert.InDelta(t, 0.25, float64(ops['*'])/n, 0.05)
	// Same seed, same lines.
	a, b := NewCorpus(3, 1, 0.1), NewCorpus(3, 1, 0.1)
	for range 50 {
		_, la := a.Line()
		_, lb := b.Line()
		require.Equal(t, la, lb)
	}
}

func TestRunIsReproducibleAndLearns(t *testing.T) {
	t.Parallel()
	o := Options{
		Config: engine.Config{Vocab: engine.VocabSize, Dim: 32, Layers: 1, Heads: 2, Hidden: 64, Context: 32},
		Seed:   5, Steps: 30, Batch: 16, LR: 1e-2, EvalN: 5,
	}
	var losses []float64
	o.Threads = 1
	m1, rep, err := Run(context.Background(), o, func(p Progress) { losses = append(losses, p.Loss) })
	require.NoError(t, err)
	o.Threads = 2
	m2, _, err := Run(context.Background(), o, nil)
	require.NoError(t, err)
	assert.Equal(t, m1, m2, "bit-identical for 1 and 2 threads")
	assert.Less(t, rep.FinalLoss, losses[0]/2, "loss falls: %v", losses)
	// Every line has at least len("What is 1 * 1? 1\n") = 17 tokens with BOS.
	assert.GreaterOrEqual(t, rep.Tokens, 30*16*17)
	assert.Len(t, losses, 30)
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, DefaultOptions().Validate())
	assert.Error(t, Options{NoiseRate: 1}.Validate())
	assert.Error(t, Options{LR: -1}.Validate())
	o := DefaultOptions().withDefaults()
	assert.InDelta(t, o.LR, o.lr(o.Warmup), 1e-15)
	assert.InDelta(t, o.LR/10, o.lr(o.Steps), 1e-12)
}
