package e2e

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/backend/tinker/resilient"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/server/steplog"
)

// kill is one planned fault: once the trainer has been asked for step
// afterStep's optimizer step, the next call role's client makes SIGKILLs
// the process and restarts it on the same address and store.
type kill struct {
	afterStep int
	role      string
}

// faults carries out a plan of kills from inside the clients' calls, so
// each kill lands inside the run and inside a call (the trainer's next
// forward_backward, already submitted; a sample, sent while the kill runs)
// however fast or slow the machine: the points are counted in calls, not
// timed.
type faults struct {
	t     *testing.T
	procs map[string]*proc

	mu         sync.Mutex
	plan       []kill // not yet carried out, in order
	optimSteps int    // optimizer steps asked of the trainer so far
	killed     map[string]int

	killing sync.Mutex     // one kill and restart at a time
	wg      sync.WaitGroup // the kills under way
}

func newFaults(t *testing.T, procs map[string]*proc, plan []kill) *faults {
	return &faults{t: t, procs: procs, plan: slices.Clone(plan), killed: map[string]int{}}
}

// call is told of each call role's client makes; it starts the kill due,
// if any, and returns without waiting for it.
func (f *faults) call(role string) {
	f.mu.Lock()
	var due *kill
	for i, k := range f.plan {
		if k.role == role && k.afterStep <= f.optimSteps {
			due = &k
			f.plan = slices.Delete(f.plan, i, i+1)
			break
		}
	}
	f.mu.Unlock()
	if due == nil {
		return
	}
	f.wg.Go(func() {
		f.killing.Lock()
		defer f.killing.Unlock()
		p := f.procs[due.role]
		p.kill()
		p.start()
		f.mu.Lock()
		f.killed[due.role]++
		f.mu.Unlock()
		f.t.Logf("killed and restarted the %s process after step %d", due.role, due.afterStep)
	})
}

// wait waits for the kills under way and returns how many of each role
// were carried out.
func (f *faults) wait() map[string]int {
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.killed
}

// faultyTrainer counts the optimizer steps asked for and kills the
// trainer process as its next forward_backward is under way.
type faultyTrainer struct {
	rl.Trainer
	f *faults
}

func (t faultyTrainer) ForwardBackward(ctx context.Context, data []rl.Datum, loss rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	fut := t.Trainer.ForwardBackward(ctx, data, loss)
	t.f.call("trainer")
	return fut
}

func (t faultyTrainer) OptimStep(ctx context.Context, p rl.AdamParams) *rl.Future[rl.OptimStepOutput] {
	t.f.mu.Lock()
	t.f.optimSteps++
	t.f.mu.Unlock()
	return t.Trainer.OptimStep(ctx, p)
}

// faultySampler kills the sampler process while a sample is under way.
type faultySampler struct {
	rl.Sampler
	f *faults
}

func (s faultySampler) Sample(ctx context.Context, prompt rl.ModelInput, n int, p rl.SamplingParams) (rl.SampleOutput, error) {
	s.f.call("sampler")
	return s.Sampler.Sample(ctx, prompt, n, p)
}

// TestRemoteLoopSurvivesKills runs the loop against a trainer process and
// a sampler process and SIGKILLs each of them mid-call (three times each,
// alternating), restarting each on the same store. The run must
// complete all its steps; the trainer's persisted step log must show every
// seq_id applied once per model, versions strictly consecutive, each
// restarted model resumed by load_weights from a saved state, and a
// lineage 1..steps; and every checkpoint folder in the store must verify.
func TestRemoteLoopSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tandem command and runs two server processes")
	}
	ctx := t.Context() // no deadline but go test's -timeout
	store := t.TempDir()
	procs := map[string]*proc{
		"trainer": startServe(t, "trainer", store, apiKey),
		"sampler": startServe(t, "sampler", store, apiKey),
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	// A call's retries may give up while a process restarts (the client
	// then recovers, as it does from a lost model); a recovery may not,
	// however long a loaded machine takes to restart a process.
	client := func(p *proc) tinker.Options {
		return tinker.Options{BaseURL: p.url(), APIKey: apiKey, RetryInitial: 50 * time.Millisecond, RetryMax: 500 * time.Millisecond, RetryMaxElapsed: 2 * time.Second}
	}
	tr, err := resilient.NewTrainer(ctx, resilient.Options{Client: client(procs["trainer"]), Base: basemodel.Name, Lora: lora, Logger: logger, RecoverFor: recoverForever})
	require.NoError(t, err)
	defer tr.Close()
	smp, err := resilient.NewSampler(ctx, resilient.Options{Client: client(procs["sampler"]), Base: basemodel.Name, Logger: logger, RecoverFor: recoverForever})
	require.NoError(t, err)
	defer smp.Close()

	plan := []kill{{2, "sampler"}, {5, "trainer"}, {8, "sampler"}, {10, "trainer"}, {13, "sampler"}, {16, "trainer"}}
	f := newFaults(t, procs, plan)
	defer f.wg.Wait() // also when the run fails, before the processes' cleanup
	start := time.Now()
	c := runLoop(ctx, t, "e2e-faults", faultyTrainer{tr, f}, faultySampler{smp, f}, nil)
	elapsed := time.Since(start)
	killed := f.wait()

	r := c.rewards()
	t.Logf("run with faults (%v): %s", elapsed.Round(time.Millisecond), formatCurve(r))
	require.Len(t, r, steps, "the run completed every step")
	assert.Equal(t, len(plan), killed["trainer"]+killed["sampler"], "every planned kill happened")
	last := c.steps[len(c.steps)-1]
	assert.Equal(t, policy.Version(steps), last.Version)
	assert.Equal(t, policy.Version(steps), last.Served)
	assert.Equal(t, killed["trainer"], tr.Recoveries(), "one recovery per trainer kill")
	assert.GreaterOrEqual(t, smp.Recoveries(), 1, "the sampler client noticed its server restart")

	recs, err := steplog.ReadFile(filepath.Join(store, stepLogFile))
	require.NoError(t, err)
	rep, err := steplog.Audit(recs)
	require.NoError(t, err, "step log audit")
	assert.Equal(t, policy.Version(steps), rep.Final, "no optimizer step lost")
	assert.Len(t, rep.Lineage, steps, "no optimizer step applied twice in the final weights' history")
	assert.Equal(t, killed["trainer"], rep.Resumes, "each restarted model resumed from a saved state")
	assert.Len(t, rep.Models, killed["trainer"]+1)
	assert.Equal(t, tr.ModelID(), rep.Models[len(rep.Models)-1])
	checked, leftovers := verifyStore(ctx, t, store)
	t.Logf("kills survived: %d (trainer %d, sampler %d); step log: %d calls, %d optimizer steps applied, %d rolled back and redone, %d resumes; %d checkpoints verified, %d hidden leftovers; sampler client recoveries %d",
		killed["trainer"]+killed["sampler"], killed["trainer"], killed["sampler"], rep.Calls, rep.Applied, rep.RolledBack, rep.Resumes, checked, leftovers, smp.Recoveries())
	assert.Greater(t, mean(r[steps-3:]), mean(r[:3]), "reward still rises")
}

// testWriter sends log lines to t.Log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}
