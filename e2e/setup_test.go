package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/loop"
	"github.com/tandemrl/tandem/rollout"
	"github.com/tandemrl/tandem/tasks/arithmetic"
	"github.com/tandemrl/tandem/wire"
)

const (
	apiKey = "e2e-key-0123456789"
	// The task: a fixed set of training problems, all of them in every
	// batch (problemCount groups per step), so that the reward of a short
	// run rises reliably and step-to-step noise is only the sampling's.
	problemCount = 8
	steps        = 20
)

// lora is the adapter every e2e trainer creates: the engine's default shape.
var lora = wire.LoraConfig{Rank: 8, TrainAttn: true, TrainMLP: true, TrainUnembed: true}

// rlConfig is the synchronous GRPO configuration of both tests.
func rlConfig(run string) rl.Config {
	return rl.Config{
		GroupsPerBatch: problemCount, GroupSize: 8, MaxStaleness: 0, Steps: steps, Seed: 1, Run: run,
		Adam:     rl.AdamParams{LearningRate: 2e-3, GradClipNorm: 1},
		Sampling: rl.SamplingParams{MaxTokens: 16, Temperature: 1, StopTokens: []int{engine.Newline}},
	}
}

// problems returns the first problemCount training problems of the
// arithmetic task, with the task's reward (1 for the right final integer
// plus 0.1 for a terse answer, as tandem train and examples/arithmetic).
func problems(t *testing.T) []rollout.Problem {
	t.Helper()
	train, _ := arithmetic.Split()
	return arithmetic.Problems(train[:problemCount], arithmetic.Reward(arithmetic.FormatWeight))
}

// curve collects the loop's step metrics.
type curve struct {
	mu    sync.Mutex
	steps []loop.StepMetrics
	after func(loop.StepMetrics)
}

func (c *curve) observe(m loop.StepMetrics) {
	c.mu.Lock()
	c.steps = append(c.steps, m)
	c.mu.Unlock()
	if c.after != nil {
		c.after(m)
	}
}

func (c *curve) rewards() []float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]float64, len(c.steps))
	for i, m := range c.steps {
		out[i] = m.MeanReward
	}
	return out
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func formatCurve(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 3, 64)
	}
	return strings.Join(parts, " ")
}

// runLoop runs the arithmetic loop on tr and smp and returns its curve.
func runLoop(ctx context.Context, t *testing.T, run string, tr rl.Trainer, smp rl.Sampler, after func(loop.StepMetrics)) *curve {
	t.Helper()
	return runLoopConfig(ctx, t, rlConfig(run), tr, smp, after)
}

// runLoopConfig is runLoop with its own config.
func runLoopConfig(ctx context.Context, t *testing.T, cfg rl.Config, tr rl.Trainer, smp rl.Sampler, after func(loop.StepMetrics)) *curve {
	t.Helper()
	c := &curve{after: after}
	lp, err := loop.New(cfg, loop.Deps{
		Trainer: tr, Samplers: []rl.Sampler{smp},
		Dataset: rollout.NewSliceDataset(problems(t), 0, -1), Decode: arithmetic.Decode,
		Observer: c.observe,
	})
	require.NoError(t, err)
	require.NoError(t, lp.Run(ctx))
	return c
}

// verifyStore opens every checkpoint folder <root>/<run>/<kind>/<name> and
// rehashes its files against its manifest; it returns how many it checked
// and how many hidden leftovers (temporary folders) it saw.
func verifyStore(ctx context.Context, t *testing.T, root string) (checked, leftovers int) {
	t.Helper()
	runs, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, r := range runs {
		if !r.IsDir() {
			continue
		}
		if strings.HasPrefix(r.Name(), ".") {
			leftovers++
			continue
		}
		kinds, err := os.ReadDir(filepath.Join(root, r.Name()))
		require.NoError(t, err)
		for _, k := range kinds {
			if !k.IsDir() {
				continue
			}
			names, err := os.ReadDir(filepath.Join(root, r.Name(), k.Name()))
			require.NoError(t, err)
			for _, n := range names {
				dir := filepath.Join(root, r.Name(), k.Name(), n.Name())
				if strings.HasPrefix(n.Name(), ".") {
					leftovers++
					continue
				}
				ck, err := checkpoint.OpenDir(dir)
				require.NoError(t, err, "checkpoint folder %s", dir)
				require.NoError(t, ck.Verify(ctx), "checkpoint folder %s", dir)
				checked++
			}
		}
	}
	return checked, leftovers
}
