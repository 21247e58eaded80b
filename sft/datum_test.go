package sft

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/rl"
)

func TestDatumMatchesNaive(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 1))
	for range 300 {
		prompt := make([]int, rng.IntN(5))
		completion := make([]int, 1+rng.IntN(5))
		for i := range prompt {
			prompt[i] = rng.IntN(50)
		}
		for i := range completion {
			completion[i] = 50 + rng.IntN(50)
		}
		d, err := Datum(prompt, completion)
		if len(prompt)+len(completion) < 2 {
			require.Error(t, err)
			continue
		}
		require.NoError(t, err)
		// Naive: the sequence, and for each position whether its target
		// (the next token) is a completion token.
		seq := append(append([]int{}, prompt...), completion...)
		var in, tg []int
		var w []float64
		for p := 0; p+1 < len(seq); p++ {
			in = append(in, seq[p])
			tg = append(tg, seq[p+1])
			if p+1 >= len(prompt) {
				w = append(w, 1)
			} else {
				w = append(w, 0)
			}
		}
		assert.Equal(t, in, d.ModelInput.AllTokens())
		assert.Equal(t, rl.IntTensor(tg), d.LossFnInputs[rl.InputTargetTokens])
		assert.Equal(t, w, d.LossFnInputs[rl.InputWeights].Floats)
		for _, td := range d.LossFnInputs {
			require.NoError(t, td.Validate())
		}
		// Weighted targets are exactly the completion (minus a first token
		// that no position predicts when the prompt is empty).
		var trained []int
		for p, x := range w {
			if x == 1 {
				trained = append(trained, tg[p])
			}
		}
		assert.Equal(t, completion[max(0, 1-len(prompt)):], trained)
	}
	_, err := Datum([]int{1}, nil)
	require.ErrorContains(t, err, "empty completion")
}

func TestDatums(t *testing.T) {
	t.Parallel()
	var tok engine.Tokenizer
	f := Format{Prefix: []int{engine.BOS}, Suffix: []int{engine.EOS}, MaxTokens: 12}
	data, err := Datums(tok, []Example{{Prompt: "1+2=", Completion: "3"}}, f)
	require.NoError(t, err)
	require.Len(t, data, 1)
	want, err := tok.Encode("1+2=3")
	require.NoError(t, err)
	seq := append(append([]int{engine.BOS}, want...), engine.EOS)
	assert.Equal(t, seq[:len(seq)-1], data[0].ModelInput.AllTokens())
	assert.Equal(t, 2.0, weightSum(data), "the completion and the suffix are trained")

	_, err = Datums(tok, []Example{{Prompt: "ok", Completion: "a"}, {Prompt: "naïve", Completion: "b", Line: 7}}, f)
	require.ErrorContains(t, err, "line 7: prompt")
	_, err = Datums(tok, []Example{{Prompt: "ok", Completion: "∑"}}, f)
	require.ErrorContains(t, err, "example 0: completion")
	_, err = Datums(tok, []Example{{Prompt: "a long prompt", Completion: "b", Line: 3}}, f)
	require.ErrorContains(t, err, "line 3: 15 input tokens; the model takes at most 12")
}

func TestScheduleFactor(t *testing.T) {
	t.Parallel()
	const total = 20
	for _, tc := range []struct {
		s    Schedule
		want func(step int) float64
	}{
		{Schedule{}, func(int) float64 { return 1 }},
		{Schedule{WarmupSteps: 4}, func(s int) float64 {
			if s < 4 {
				return float64(s+1) / 4
			}
			return 1
		}},
		{Schedule{WarmupSteps: 5, Decay: Linear}, func(s int) float64 {
			if s < 5 {
				return float64(s+1) / 5
			}
			return 1 - float64(s-5)/15
		}},
		{Schedule{Decay: Cosine, MinFactor: 0.1}, func(s int) float64 {
			return 0.1 + 0.9*0.5*(1+math.Cos(math.Pi*float64(s)/total))
		}},
	} {
		for s := range total {
			assert.InDelta(t, tc.want(s), tc.s.Factor(s, total), 1e-12, "%+v step %d", tc.s, s)
		}
	}
	// Properties: within (MinFactor, 1], non-increasing after warm-up, and
	// the last step keeps a positive rate.
	for _, d := range []Decay{Linear, Cosine} {
		s := Schedule{WarmupSteps: 3, Decay: d, MinFactor: 0}
		prev := math.Inf(1)
		for step := 3; step < total; step++ {
			f := s.Factor(step, total)
			assert.LessOrEqual(t, f, prev)
			assert.Greater(t, f, 0.0)
			assert.LessOrEqual(t, f, 1.0)
			prev = f
		}
	}
	assert.Equal(t, 1.0, Schedule{WarmupSteps: 10, Decay: Cosine}.Factor(12, 10), "a run no longer than its warm-up")

	require.NoError(t, Schedule{}.Validate())
	for _, s := range []Schedule{{Decay: "exp"}, {WarmupSteps: -1}, {MinFactor: 2}, {MinFactor: math.NaN()}} {
		require.ErrorIs(t, s.Validate(), ErrConfig, "%+v", s)
	}
	assert.ErrorContains(t, Schedule{Decay: "exp"}.Validate(), "allowed: constant, linear, cosine")
}
