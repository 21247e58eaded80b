package loop

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/sim"
	"github.com/tandemrl/tandem/ledger"
	"github.com/tandemrl/tandem/rl"
)

type scenario struct {
	cfg      rl.Config
	samplers int
	// cancelAt cancels the run as the trainer receives its cancelAt-th
	// forward-backward (0 = run to the step budget).
	cancelAt int
	slowLoad bool
}

func randomScenario(seed uint64) scenario {
	rng := rand.New(rand.NewPCG(seed, 11))
	policies := []rl.StalePolicy{rl.Pace, rl.Drop, rl.Requeue}
	b := 1 + rng.IntN(4)
	cfg := rl.Config{
		GroupsPerBatch: b,
		GroupSize:      1 + rng.IntN(3),
		MaxStaleness:   rng.IntN(4),
		StalePolicy:    policies[rng.IntN(3)],
		Steps:          4 + rng.IntN(6),
		Seed:           int64(seed),
		Watchdog:       time.Hour,
	}
	if rng.IntN(2) == 0 {
		cfg.Workers = 1 + rng.IntN(3*b)
	}
	if b%2 == 0 && rng.IntN(3) == 0 {
		cfg.Substeps = 2
	}
	if rng.IntN(3) == 0 {
		cfg.BufferLimit = b + rng.IntN(2*b)
	}
	sc := scenario{cfg: cfg, samplers: 1 + rng.IntN(2), slowLoad: rng.IntN(3) == 0}
	if rng.IntN(4) == 0 {
		sc.cancelAt = 1 + rng.IntN(cfg.Steps*max(cfg.Substeps, 1))
	}
	return sc
}

// TestPipelineProperties runs the whole loop on the simulated backend over
// many seeds — random batch shapes, staleness bounds, policies, worker
// counts, sampler replicas, log-normal latencies, slow weight loads and
// cancellation mid-run — and checks the contract of DESIGN.md:
//   - no trained group is more than k versions stale; k = 0 ⇒ all fresh;
//   - pace drops and requeues nothing;
//   - requeue loses no prompt: every problem handed out is accounted for;
//   - every accepted group is trained, dropped, requeued or reported;
//   - no goroutine outlives Run (TestMain's goleak check).
func TestPipelineProperties(t *testing.T) {
	t.Parallel()
	seeds := uint64(60)
	if testing.Short() {
		seeds = 30
	}
	for seed := range seeds {
		sc := randomScenario(seed)
		t.Run(fmt.Sprintf("seed%d_k%d_%s", seed, sc.cfg.MaxStaleness, sc.cfg.StalePolicy), func(t *testing.T) {
			t.Parallel()
			checkScenario(t, seed, sc)
		})
	}
}

func checkScenario(t *testing.T, seed uint64, sc scenario) {
	cfg := sc.cfg
	stop := errors.New("scenario cancels the run")
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	tr := &onCall{Trainer: sim.NewTrainer(sim.TrainerConfig{
		ForwardBackward: sim.LogNormal(200*time.Microsecond, 0.5, seed),
		OptimStep:       sim.Fixed(50 * time.Microsecond),
	}), fbN: int32(sc.cancelAt), onFB: func() { cancel(stop) }}
	var samplers []rl.Sampler
	for i := range sc.samplers {
		scfg := sim.SamplerConfig{Tokens: 3, Latency: sim.LogNormal(150*time.Microsecond, 0.8, seed*31+uint64(i)), Seed: seed}
		if sc.slowLoad {
			scfg.Load = sim.Fixed(300 * time.Microsecond)
		}
		samplers = append(samplers, sim.NewSampler(scfg))
	}
	data := newCountingDataset(10_000, -1)
	var c collector
	led := &ledger.Ledger{}
	l, err := New(cfg, Deps{Trainer: tr, Samplers: samplers, Dataset: data, Observer: c.observe, Ledger: led})
	require.NoError(t, err)
	err = l.Run(ctx)
	if sc.cancelAt > 0 && err != nil {
		require.ErrorIs(t, err, stop)
	} else {
		require.NoError(t, err)
	}
	rep := l.Report()
	k := cfg.MaxStaleness

	// Staleness.
	for _, m := range c.all() {
		require.LessOrEqual(t, m.MaxStaleness, k, "step %d", m.Step)
		if k == 0 {
			require.Len(t, m.Staleness, 1, "k=0: all groups fresh at step %d", m.Step)
		}
		require.Equal(t, cfg.GroupsPerBatch, m.Groups)
	}
	if sc.cancelAt == 0 || err == nil {
		require.Equal(t, cfg.Steps, rep.Steps)
		require.Len(t, c.all(), cfg.Steps)
	} else {
		// The step in flight when the run was cancelled is confirmed
		// within the shutdown grace; no step starts after it.
		subs := cfg.WithDefaults().Substeps
		require.Equal(t, (sc.cancelAt+subs-1)/subs, rep.Steps)
	}

	// Policies.
	st := rep.Buffer
	switch cfg.StalePolicy {
	case rl.Pace:
		assert.Zero(t, st.Dropped, "pace drops nothing")
		assert.Zero(t, st.Requeued, "pace requeues nothing")
	case rl.Drop:
		assert.Zero(t, st.Requeued)
	case rl.Requeue:
		assert.Zero(t, st.Dropped)
	}

	// Every accepted group is accounted for.
	assert.Equal(t, st.Accepted, st.Trained+st.Dropped+st.Requeued+int64(len(rep.Leftover)),
		"accepted = trained + dropped + requeued + leftover")
	assert.Equal(t, int64(len(rep.Leftover)), st.Drained)
	assert.Equal(t, int64(rep.Steps*cfg.GroupsPerBatch+len(rep.Unconfirmed)), st.Trained)
	assert.Equal(t, st.Admitted, st.Accepted+st.Failed, "every admission ended")
	assert.Zero(t, st.Running)

	// No prompt is lost: each one handed out became a group, failed, was
	// cut short by shutdown, or (requeue) went back to the dataset.
	data.mu.Lock()
	served, requeued := 0, 0
	for _, n := range data.served {
		served += n
	}
	for _, n := range data.requeued {
		requeued += n
	}
	data.mu.Unlock()
	assert.Equal(t, int64(served), st.Accepted+rep.Failed+rep.Abandoned)
	assert.Equal(t, st.Requeued, int64(requeued), "every requeued group's prompt went back to the dataset")

	// The ledger accounts for every hand-out of every prompt, and its
	// totals are the loop's counts.
	require.NoError(t, led.Check())
	tot := rep.Ledger.Totals
	assert.Equal(t, served, tot.HandedOut, "hand-outs")
	assert.Equal(t, st.Trained, int64(tot.Trained+tot.Unconfirmed), "trained (unconfirmed included, as the buffer counts them)")
	assert.Equal(t, len(rep.Unconfirmed), tot.Unconfirmed)
	assert.Equal(t, st.Dropped, int64(tot.Dropped))
	assert.Equal(t, st.Requeued, int64(tot.Requeued))
	assert.Equal(t, rep.Failed, int64(tot.Failed))
	assert.Equal(t, rep.Abandoned, int64(tot.Abandoned))
	assert.Equal(t, len(rep.Leftover), tot.LeftOver)
	for _, e := range led.Entries() {
		for _, tr := range e.TrainedAt {
			require.LessOrEqual(t, tr.Staleness, int64(k), "%+v", e)
		}
	}
	if errors.Is(err, stop) {
		t.Logf("cancelled after %d steps", rep.Steps)
	}
}
