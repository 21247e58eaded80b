package loop

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/sim"
	"github.com/tandemrl/tandem/ledger"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/algo"
	"github.com/tandemrl/tandem/rollout"
)

// trainedKeys wraps the default algorithm and counts, per prompt, the
// groups the loop trained.
type trainedKeys struct {
	rl.Algorithm
	mu sync.Mutex
	n  map[string]int
}

func newTrainedKeys(t *testing.T) *trainedKeys {
	g, err := algo.New(algo.Config{}, nil)
	require.NoError(t, err)
	return &trainedKeys{Algorithm: g, n: map[string]int{}}
}

func (a *trainedKeys) Batch(ctx context.Context, t rl.Trainer, step policy.Version, groups []rl.Group) (rl.Batch, error) {
	a.mu.Lock()
	for i := range groups {
		a.n[groups[i].Source.(rollout.Problem).Key()]++
	}
	a.mu.Unlock()
	return a.Algorithm.Batch(ctx, t, step, groups)
}

type requeueRun struct {
	prompts, groups, groupSize, k, workers, substeps, samplers int
	latency                                                    time.Duration // median Sample latency (0 = none)
	multiTurn                                                  bool          // two-turn episodes instead of single-turn prompts
}

// runFiniteRequeue runs one epoch of a finite dataset with requeue and
// checks that every prompt was trained exactly once, and that the run
// reports data exhaustion (nil) with nothing left over.
func runFiniteRequeue(t *testing.T, seed uint64, r requeueRun) {
	t.Helper()
	cfg := rl.Config{GroupsPerBatch: r.groups, GroupSize: r.groupSize, MaxStaleness: r.k,
		StalePolicy: rl.Requeue, Workers: r.workers, Substeps: r.substeps, Steps: 1000, Seed: int64(seed), Watchdog: time.Hour}
	var samplers []rl.Sampler
	for i := range r.samplers {
		sc := sim.SamplerConfig{Tokens: 2, Seed: seed}
		if r.latency > 0 {
			sc.Latency = sim.LogNormal(r.latency, 0.8, seed*7+uint64(i))
		}
		samplers = append(samplers, sim.NewSampler(sc))
	}
	data := newCountingDataset(r.prompts, 1)
	if r.multiTurn {
		items := make([]rollout.Problem, r.prompts)
		for i := range items {
			items[i] = guessProblem{i}
		}
		data.SliceDataset = rollout.NewSliceDataset(items, 0, 1)
	}
	alg := newTrainedKeys(t)
	var c collector
	led := &ledger.Ledger{}
	var changes []ledger.Change // the observer's goroutine appends; read after Run
	l, err := New(cfg, Deps{Trainer: sim.NewTrainer(sim.TrainerConfig{}), Samplers: samplers, Dataset: data,
		Algorithm: alg, Observer: c.observe, Ledger: led,
		LedgerObserver: func(ch ledger.Change) { changes = append(changes, ch) }})
	require.NoError(t, err)
	require.NoError(t, l.Run(context.Background()), "data exhausted")
	rep := l.Report()

	require.Len(t, alg.n, r.prompts, "every prompt trained (%d requeued, %d left over)", rep.Buffer.Requeued, len(rep.Leftover))
	for key, n := range alg.n {
		require.Equal(t, 1, n, "prompt %s trained once", key)
	}
	assert.Empty(t, rep.Leftover)
	assert.Zero(t, data.Pending(), "no requeued prompt waits in the dataset")
	assert.Zero(t, rep.Buffer.Dropped)
	st := rep.Buffer
	assert.Equal(t, st.Accepted, st.Trained+st.Requeued, "accepted = trained + requeued")
	assert.Equal(t, int64(r.prompts), st.Trained)

	// The ledger says the same, prompt by prompt.
	require.NoError(t, led.Check())
	sum := rep.Ledger
	require.NotNil(t, sum)
	assert.Equal(t, r.prompts, sum.Prompts)
	assert.Equal(t, r.prompts, sum.TrainedOnce)
	assert.Zero(t, sum.NeverTrainedCount)
	assert.Equal(t, st.Requeued, int64(sum.Totals.Requeued))
	// The observer saw every change: replayed, they make the same ledger.
	require.Zero(t, rep.LedgerObserverDropped)
	byPrompt := func(es []ledger.Entry) []ledger.Entry {
		slices.SortFunc(es, func(a, b ledger.Entry) int { return strings.Compare(a.Prompt, b.Prompt) })
		return es
	}
	require.Equal(t, byPrompt(led.Entries()), byPrompt(replay(t, changes)))
	for _, e := range led.Entries() {
		require.Equal(t, 1, e.Trained, "%+v", e)
		require.Equal(t, 1+e.Requeued, e.HandedOut, "each requeue hands the prompt out again: %+v", e)
		require.Len(t, e.TrainedAt, 1)
		require.LessOrEqual(t, e.TrainedAt[0].Staleness, int64(r.k))
		require.Equal(t, alg.n[e.Prompt], e.Trained)
	}
	// Every batch is full but the last, which may be short.
	ms := c.all()
	for i, m := range ms {
		assert.LessOrEqual(t, m.MaxStaleness, r.k)
		if i < len(ms)-1 {
			assert.Equal(t, r.groups, m.Groups, "step %d", m.Step)
		} else {
			assert.True(t, m.Groups >= 1 && m.Groups <= r.groups, "last step: %d groups", m.Groups)
		}
	}
}

// The scenario: 59 prompts, k = 2, requeue, 11 groups per batch,
// 44 workers, zero-latency samplers. Before the fix, the workers stopped at
// the dataset's first io.EOF and requeued prompts were never trained.
func TestRequeueTrainsEveryPromptOfAFiniteDataset(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		runFiniteRequeue(t, seed, requeueRun{prompts: 59, groups: 11, groupSize: 4, k: 2, workers: 44, samplers: 1})
	}
}

// Randomized finite datasets with requeue: batch shapes, staleness bounds,
// worker counts, substeps, replicas, zero and log-normal latencies,
// single- and multi-turn episodes. No run loses a prompt.
func TestRequeueLosesNoPrompt(t *testing.T) {
	t.Parallel()
	seeds := uint64(1000)
	if testing.Short() {
		seeds = 200
	}
	for seed := range seeds {
		rng := rand.New(rand.NewPCG(seed, 18))
		b := 1 + rng.IntN(12)
		r := requeueRun{prompts: 1 + rng.IntN(80), groups: b, groupSize: 1 + rng.IntN(3), k: rng.IntN(4),
			workers: 1 + rng.IntN(4*b), substeps: 1, samplers: 1 + rng.IntN(2)}
		if b%2 == 0 && rng.IntN(3) == 0 {
			r.substeps = 2
		}
		if rng.IntN(4) == 0 {
			r.latency = time.Duration(20+rng.IntN(200)) * time.Microsecond
		}
		r.multiTurn = rng.IntN(4) == 0
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			t.Parallel()
			runFiniteRequeue(t, seed, r)
		})
	}
}

// replay applies observed ledger changes to a new ledger and returns its
// entries.
func replay(t *testing.T, changes []ledger.Change) []ledger.Entry {
	t.Helper()
	var l ledger.Ledger
	for _, c := range changes {
		switch c.Event {
		case "taken":
			l.Taken(c.Prompt)
		case "trained":
			require.NotNil(t, c.Training)
			l.Trained(c.Prompt, *c.Training)
		case "requeued":
			l.Requeued(c.Prompt)
		case "dropped":
			l.Dropped(c.Prompt)
		case "abandoned":
			l.Abandoned(c.Prompt)
		case "left_over":
			l.LeftOver(c.Prompt)
		case "unconfirmed":
			l.Unconfirmed(c.Prompt)
		default:
			t.Fatalf("unexpected change %+v", c)
		}
	}
	return l.Entries()
}
