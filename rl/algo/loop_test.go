package algo_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
	"github.com/tandemrl/tandem/rl/loop"
	"github.com/tandemrl/tandem/rollout"
)

// lowercase rewards the share of lowercase letters in a completion: about
// 26/98 for a fresh tiny model, so every group carries signal.
func lowercase(_ context.Context, s reward.Sample) (float64, error) {
	if len(s.Tokens) == 0 {
		return 0, nil
	}
	n := 0
	for _, t := range s.Tokens {
		if t >= engine.FirstPrintable+int('a'-' ') && t <= engine.FirstPrintable+int('z'-' ') {
			n++
		}
	}
	return float64(n) / float64(len(s.Tokens)), nil
}

// TestGRPOLearnsInTheLoop runs each objective in the asynchronous pipeline
// (max staleness 1) on a tiny engine model with the KL penalty on, and
// checks that the mean reward rises.
func TestGRPOLearnsInTheLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("trains four tiny models")
	}
	t.Parallel()
	for _, obj := range algo.Objectives() {
		t.Run(string(obj), func(t *testing.T) {
			t.Parallel()
			base := tinyBase(t)
			tr := newTrainer(t, base)
			smp, err := local.NewSampler(base, local.SamplerOptions{Shelf: tr.Shelf(), Seed: 1})
			require.NoError(t, err)
			var problems []rollout.Problem
			for i := range 64 {
				problems = append(problems, &rollout.SingleTurn{ID: strconv.Itoa(i),
					Prompt: rl.Tokens([]int{engine.BOS, engine.FirstPrintable + 33 + i%26}), Reward: lowercase})
			}
			g, err := algo.New(algo.Config{Objective: obj, KLCoef: 0.01}, tr)
			require.NoError(t, err)
			var (
				mu      sync.Mutex
				rewards []float64
				metrics []map[string]float64
			)
			cfg := rl.Config{GroupsPerBatch: 4, GroupSize: 8, MaxStaleness: 1, Steps: 16, Seed: 1,
				Adam: rl.AdamParams{LearningRate: 2e-2}, Sampling: rl.SamplingParams{MaxTokens: 4, Temperature: 1}}
			lp, err := loop.New(cfg, loop.Deps{Trainer: tr, Samplers: []rl.Sampler{smp}, Algorithm: g,
				Dataset: rollout.NewSliceDataset(problems, 0, -1), Decode: engine.Tokenizer{}.Decode,
				Observer: func(m loop.StepMetrics) {
					mu.Lock()
					defer mu.Unlock()
					rewards = append(rewards, m.MeanReward)
					metrics = append(metrics, m.Metrics)
				}})
			require.NoError(t, err)
			require.NoError(t, lp.Run(context.Background()))
			mu.Lock()
			defer mu.Unlock()
			require.GreaterOrEqual(t, len(rewards), 12)
			first := (rewards[0] + rewards[1] + rewards[2]) / 3
			n := len(rewards)
			last := (rewards[n-1] + rewards[n-2] + rewards[n-3]) / 3
			t.Logf("%s: mean reward %.3f over the first 3 steps, %.3f over the last 3", obj, first, last)
			assert.Greater(t, last, first+0.15, "rewards %v", rewards)
			_, ok := metrics[n-1]["kl:policy_base"]
			assert.True(t, ok, "the KL estimate is reported")
			if obj == algo.Decoupled {
				assert.Contains(t, metrics[n-1], "decoupled:sampler_gap")
			}
		})
	}
}
