package e2e

import (
	"context"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/backend/tinker/resilient"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl/loop"
	"github.com/tandemrl/tandem/server/steplog"
)

// kill is one planned fault: after the loop reports step afterStep, wait a
// little (so the kill lands inside the next step's calls) and SIGKILL the
// process, then restart it on the same address and store.
type kill struct {
	afterStep int
	role      string
}

// TestRemoteLoopSurvivesKills runs the loop against a trainer process and
// a sampler process and SIGKILLs each of them mid-run (three times each,
// alternating), restarting each on the same store. The run must
// complete all its steps; the trainer's persisted step log must show every
// seq_id applied once per model, versions strictly consecutive, each
// restarted model resumed by load_weights from a saved state, and a
// lineage 1..steps; and every checkpoint folder in the store must verify.
func TestRemoteLoopSurvivesKills(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tandem command and runs two server processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	store := t.TempDir()
	procs := map[string]*proc{
		"trainer": startServe(t, "trainer", store, apiKey),
		"sampler": startServe(t, "sampler", store, apiKey),
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	if testing.Verbose() {
		logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	client := func(p *proc) tinker.Options {
		return tinker.Options{BaseURL: p.url(), APIKey: apiKey, RetryInitial: 50 * time.Millisecond, RetryMax: 500 * time.Millisecond, RetryMaxElapsed: 2 * time.Second}
	}
	tr, err := resilient.NewTrainer(ctx, resilient.Options{Client: client(procs["trainer"]), Base: basemodel.Name, Lora: lora, Logger: logger})
	require.NoError(t, err)
	defer tr.Close()
	smp, err := resilient.NewSampler(ctx, resilient.Options{Client: client(procs["sampler"]), Base: basemodel.Name, Logger: logger})
	require.NoError(t, err)
	defer smp.Close()

	plan := []kill{{2, "sampler"}, {5, "trainer"}, {8, "sampler"}, {10, "trainer"}, {13, "sampler"}, {16, "trainer"}}
	var (
		wg       sync.WaitGroup
		killed   = map[string]int{}
		killedMu sync.Mutex
		rng      = rand.New(rand.NewPCG(5, 5))
		delays   = make([]time.Duration, len(plan))
	)
	for i := range delays {
		delays[i] = time.Duration(rng.IntN(400)) * time.Millisecond
	}
	after := func(m loop.StepMetrics) {
		for i, k := range plan {
			if m.Step != k.afterStep {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(delays[i])
				p := procs[k.role]
				p.kill()
				time.Sleep(300 * time.Millisecond) // clients see a refused connection for a while
				p.start()
				killedMu.Lock()
				killed[k.role]++
				killedMu.Unlock()
				t.Logf("killed and restarted the %s process after step %d (+%v)", k.role, k.afterStep, delays[i])
			}()
		}
	}
	start := time.Now()
	c := runLoop(ctx, t, "e2e-faults", tr, smp, after)
	elapsed := time.Since(start)
	wg.Wait()

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
