package loop

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/backend/sim"
	"github.com/tandemrl/tandem/reward"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rollout"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// countingDataset is a dataset that records every problem it hands out and
// gets back, to check that nothing is lost.
type countingDataset struct {
	*rollout.SliceDataset
	mu       sync.Mutex
	served   map[string]int
	requeued map[string]int
}

func newCountingDataset(n int, epochs int) *countingDataset {
	items := make([]rollout.Problem, n)
	for i := range items {
		items[i] = &rollout.SingleTurn{ID: fmt.Sprintf("p%04d", i), Prompt: rl.Tokens([]int{i % 97, 1, 2}),
			Reference: fmt.Sprint(i % 2), Reward: parity}
	}
	return &countingDataset{SliceDataset: rollout.NewSliceDataset(items, 0, epochs), served: map[string]int{}, requeued: map[string]int{}}
}

// parity rewards completions whose first token's parity matches the
// reference: about half the samples score 1.
func parity(_ context.Context, s reward.Sample) (float64, error) {
	if len(s.Tokens) > 0 && fmt.Sprint(s.Tokens[0]%2) == s.Reference {
		return 1, nil
	}
	return 0, nil
}

func (d *countingDataset) Next(ctx context.Context) (rollout.Problem, error) {
	p, err := d.SliceDataset.Next(ctx)
	if err == nil {
		d.mu.Lock()
		d.served[p.Key()]++
		d.mu.Unlock()
	}
	return p, err
}

func (d *countingDataset) Requeue(p rollout.Problem) {
	d.mu.Lock()
	d.requeued[p.Key()]++
	d.mu.Unlock()
	d.SliceDataset.Requeue(p)
}

// collector gathers observed metrics.
type collector struct {
	mu    sync.Mutex
	steps []StepMetrics
}

func (c *collector) observe(m StepMetrics) {
	c.mu.Lock()
	c.steps = append(c.steps, m)
	c.mu.Unlock()
}

func (c *collector) all() []StepMetrics {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]StepMetrics(nil), c.steps...)
}

// onCall is a simulated trainer that calls a hook when it receives its n-th
// forward-backward or its n-th optimizer step (after passing the call on):
// events placed by the run's progress rather than by a clock.
type onCall struct {
	*sim.Trainer
	fbN, optN     int32
	onFB, onOptim func()
	fbs, optims   atomic.Int32
}

func (c *onCall) ForwardBackward(ctx context.Context, d []rl.Datum, l rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	f := c.Trainer.ForwardBackward(ctx, d, l)
	if c.fbs.Add(1) == c.fbN && c.onFB != nil {
		c.onFB()
	}
	return f
}

func (c *onCall) OptimStep(ctx context.Context, p rl.AdamParams) *rl.Future[rl.OptimStepOutput] {
	f := c.Trainer.OptimStep(ctx, p)
	if c.optims.Add(1) == c.optN && c.onOptim != nil {
		c.onOptim()
	}
	return f
}
