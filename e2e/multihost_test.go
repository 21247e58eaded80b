package e2e

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/openai"
	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/ledger"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/rl/loop"
	"github.com/tandemrl/tandem/rollout"
	"github.com/tandemrl/tandem/samplerpool"
	"github.com/tandemrl/tandem/server/steplog"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

// TestMultiHost runs the loop across four hosts of a namespace network: a
// trainer host (tandem serve -role trainer, driven by backend/tinker), two
// sampler hosts (tandem serve -role sampler, driven through their
// OpenAI-compatible surface by backend/openai, pooled by samplerpool) and
// the loop in the test's own namespace. The sampler hosts load every
// version the trainer publishes from the trainer's store (a shared file
// system). Mid-run one sampler host is SIGKILLed and restarted: it comes
// back without adapters, the pool moves its calls to the other host and
// re-admits it with the newest version. The run completes with no group
// trained beyond max staleness, every prompt accounted for, each trainer
// step applied once (the trainer's step log), and the reward rising; and
// the processes did exactly what the embedded engine does in this process:
// every sampled token's log-prob is the one of the version its call
// reported (sampleLog.audit), every trainer step matches a replay of the
// same calls (trainerLog.replay).
func TestMultiHost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tandem command and runs three server processes in network namespaces")
	}
	tn := newTestNet(t, 3)
	ctx := t.Context()
	store := t.TempDir()
	trainer := startServeIn(t, tn, 0, "trainer", store, apiKey)
	samplers := []*proc{
		startServeIn(t, tn, 1, "sampler", t.TempDir(), apiKey),
		startServeIn(t, tn, 2, "sampler", t.TempDir(), apiKey),
	}

	tc, err := tinker.New(ctx, tinker.Options{BaseURL: trainer.url(), APIKey: apiKey, RetryMaxElapsed: recoverForever})
	require.NoError(t, err)
	defer tc.Close()
	remote, err := tc.NewTrainer(ctx, basemodel.Name, lora)
	require.NoError(t, err)
	tr := &trainerLog{Trainer: remote}

	st, err := checkpoint.Open(store)
	require.NoError(t, err)
	resolve := func(uri string) (string, error) {
		ck, err := st.Resolve(uri)
		return ck.Dir, err
	}
	var reps []samplerpool.Replica
	kill := &killOnCall{p: samplers[0], done: make(chan error, 1)}
	for i, p := range samplers {
		// One retry of a connection error: a dead host's calls reach the
		// pool, which moves them to the other host.
		s, err := openai.New(ctx, openai.Options{BaseURL: p.url(), APIKey: apiKey, Dialect: openai.VLLM, Model: basemodel.Name,
			ResolveCheckpoint: resolve, MaxRetries: 1})
		require.NoError(t, err, "sampler host %d", i+1)
		var smp rl.Sampler = s
		if i == 0 {
			kill.Sampler = s
			smp = kill
		}
		reps = append(reps, samplerpool.Replica{Name: tn.hosts[i+1], Sampler: smp})
	}
	pool, err := samplerpool.New(reps, samplerpool.Config{
		MaxFailures: 1,
		// A restarted host answers "model not served" until the pool
		// re-registers the newest version on it.
		IsTransient: func(err error) bool { return samplerpool.IsTransient(err) || errors.Is(err, openai.ErrModelNotServed) },
	})
	require.NoError(t, err)
	require.NoError(t, pool.Start(ctx))
	defer pool.Close()

	const k = 1
	cfg := rlConfig("multihost")
	cfg.MaxStaleness = k
	var (
		maxStale int
		mu       sync.Mutex
	)
	c := &curve{after: func(m loop.StepMetrics) {
		mu.Lock()
		maxStale = max(maxStale, m.MaxStaleness)
		mu.Unlock()
		if m.Step == steps/3 {
			kill.arm()
		}
	}}
	led := &ledger.Ledger{}
	smp := &sampleLog{Sampler: pool}
	lp, err := loop.New(cfg, loop.Deps{
		Trainer: tr, Samplers: []rl.Sampler{smp},
		Dataset: rollout.NewSliceDataset(problems(t), 0, -1), Decode: arithmetic.Decode,
		Observer: c.observe, Ledger: led,
	})
	require.NoError(t, err)
	require.NoError(t, lp.Run(ctx))
	kill.mu.Lock()
	fired := kill.fired
	kill.mu.Unlock()
	require.True(t, fired, "no call reached %s after step %d: the kill never happened", tn.hosts[1], steps/3)
	require.NoError(t, <-kill.done, "the kill and restart of %s", tn.hosts[1])

	rep := lp.Report()
	assert.Equal(t, steps, rep.Steps)
	assert.LessOrEqual(t, maxStale, k, "no group trained beyond max staleness")
	require.NotNil(t, rep.Ledger)
	require.NoError(t, led.Check(), "every prompt accounted for")
	r := c.rewards()
	require.Len(t, r, steps)
	rise := mean(r[steps-3:]) - mean(r[:3])
	t.Logf("rewards across hosts: %s (rise %.3f)", formatCurve(r), rise)
	assert.Greater(t, rise, minRise, "the loop across hosts did not learn")

	// Exactly what the processes did, call by call, against the embedded
	// engine in this process: every sampled token's log-prob at the
	// version its call reported, every trainer step on the same data.
	if raceEnabled {
		t.Log("audits against this process skipped under the race detector (.ci/run runs this test again without it)")
	} else {
		audited := smp.audit(ctx, t, st)
		for _, r := range reps {
			assert.Positive(t, audited[r.Name], "samples of replica %s audited", r.Name)
		}
		assert.Equal(t, steps, tr.replay(ctx, t, lora), "optimizer steps replayed")
	}

	seen := map[string]bool{}
	c.mu.Lock()
	for _, m := range c.steps {
		for name, gap := range m.ReplicaLogprobGap {
			seen[name] = true
			assert.False(t, gap < 0 || gap != gap, "replica %s gap %v", name, gap)
		}
	}
	last := c.steps[len(c.steps)-1].ReplicaLogprobGap
	c.mu.Unlock()
	assert.Len(t, seen, 2, "both sampler hosts' gaps are reported")
	t.Logf("per-replica log-prob gap, last step: %v", last)

	ps := pool.Stats()
	for _, s := range ps.Replicas {
		t.Logf("replica %s: calls %d, failures %d, retried away %d, ejections %d, re-admissions %d, serves version %d",
			s.Name, s.Calls, s.Failures, s.RetriedAway, s.Ejections, s.Readmissions, s.Served)
	}
	assert.Equal(t, 2, samplers[0].starts, "one kill survived")
	// Once: the calls cut off by the kill that end after the host came back
	// do not eject it again (a call of an earlier admission never ejects).
	assert.Equal(t, int64(1), ps.Replicas[0].Ejections, "the killed host was ejected, once")
	assert.GreaterOrEqual(t, ps.Replicas[0].RetriedAway, int64(1), "its call moved to the other host")

	// The trainer's step log: every optimizer step applied once.
	recs, err := steplog.ReadFile(filepath.Join(store, stepLogFile))
	require.NoError(t, err)
	audit, err := steplog.Audit(recs)
	require.NoError(t, err, "step log audit")
	assert.Equal(t, policy.Version(steps), audit.Final, "no optimizer step lost")
	assert.Len(t, audit.Lineage, steps, "no optimizer step applied twice")
	t.Logf("kills survived: 1 (sampler host %s); step log: %d calls, %d optimizer steps applied", tn.hosts[1], audit.Calls, audit.Applied)
}

// killOnCall is the first sampler host's replica: once armed, its next
// Sample SIGKILLs the host before sending the call (which then fails as a
// lost connection and moves to the other host) and restarts the host in
// the background. The kill lands inside a call however fast the machine
// is: it is counted in calls, not timed.
type killOnCall struct {
	rl.Sampler
	p    *proc
	done chan error // the restart's outcome

	mu    sync.Mutex
	armed bool
	fired bool
}

func (k *killOnCall) arm() {
	k.mu.Lock()
	k.armed = true
	k.mu.Unlock()
}

func (k *killOnCall) Sample(ctx context.Context, prompt rl.ModelInput, n int, p rl.SamplingParams) (rl.SampleOutput, error) {
	k.mu.Lock()
	fire := k.armed && !k.fired
	k.fired = k.fired || fire
	k.mu.Unlock()
	if fire {
		if err := k.p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			k.done <- err
		} else {
			<-k.p.exited
			go func() { k.done <- k.p.tryStart() }()
		}
	}
	return k.Sampler.Sample(ctx, prompt, n, p)
}

// Reload passes the pool's re-registration through to the sampler.
func (k *killOnCall) Reload(ctx context.Context, ref policy.Ref) error {
	return k.Sampler.(samplerpool.Reloader).Reload(ctx, ref)
}
