package e2e

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rollout"
	"github.com/tandemrl/tandem/server/steplog"
)

// stepLogFile is cmd/tandem.StepLogFile.
const stepLogFile = ".steplog.jsonl"

// minRise is how much the mean reward of the last three steps must exceed
// that of the first three. Over 20 synchronous steps on the 8 problems the
// shipped base model goes from about 0.4 to about 1.0 (a rise of 0.5–0.6
// in process over four seeds); the noise of a 64-sample mean is about 0.05.
const minRise = 0.15

// TestRemoteLoopLearns runs the loop in this process against a trainer
// process and a sampler process (plain backend/tinker clients), and the
// same loop in process on backend/local, and checks that both learn.
func TestRemoteLoopLearns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tandem command and runs two server processes")
	}
	ctx := t.Context() // no deadline but go test's -timeout
	store := t.TempDir()
	trainerProc := startServe(t, "trainer", store, apiKey)
	samplerProc := startServe(t, "sampler", store, apiKey)

	tc, err := tinker.New(ctx, tinker.Options{BaseURL: trainerProc.url(), APIKey: apiKey})
	require.NoError(t, err)
	defer tc.Close()
	sc, err := tinker.New(ctx, tinker.Options{BaseURL: samplerProc.url(), APIKey: apiKey})
	require.NoError(t, err)
	defer sc.Close()
	tr, err := tc.NewTrainer(ctx, basemodel.Name, lora)
	require.NoError(t, err)
	trLog := &trainerLog{Trainer: tr}
	smpLog := &sampleLog{Sampler: sc.NewSampler(basemodel.Name)}

	start := time.Now()
	remote := runLoop(ctx, t, "e2e-remote", trLog, smpLog, nil)
	remoteTime := time.Since(start)

	r := remote.rewards()
	t.Logf("across processes (%v): %s", remoteTime.Round(time.Millisecond), formatCurve(r))
	require.Len(t, r, steps)
	riseR := mean(r[steps-3:]) - mean(r[:3])
	t.Logf("rise of the mean reward across processes, last 3 steps vs first 3: %.3f", riseR)
	assert.Greater(t, riseR, minRise, "the loop across processes did not learn")

	// The same loop in process, for comparison, and the processes' calls
	// audited against the engine in this process (under the race detector
	// the engine in this process is too slow for a quick test).
	if raceEnabled {
		t.Log("in-process comparison and audits skipped under the race detector")
	} else {
		st, err := checkpoint.Open(store)
		require.NoError(t, err)
		assert.Positive(t, smpLog.audit(ctx, t, st)[""], "samples audited")
		assert.Equal(t, steps, trLog.replay(ctx, t, lora), "optimizer steps replayed")

		base, err := basemodel.Load()
		require.NoError(t, err)
		ltr, err := local.NewTrainer(base, local.TrainerOptions{Run: "e2e-local"})
		require.NoError(t, err)
		defer ltr.Close()
		lsmp, err := local.NewSampler(base, local.SamplerOptions{Shelf: ltr.Shelf()})
		require.NoError(t, err)
		start = time.Now()
		l := runLoop(ctx, t, "e2e-local", ltr, lsmp, nil).rewards()
		t.Logf("in process       (%v): %s", time.Since(start).Round(time.Millisecond), formatCurve(l))
		require.Len(t, l, steps)
		riseL := mean(l[steps-3:]) - mean(l[:3])
		t.Logf("rise in process: %.3f", riseL)
		assert.Greater(t, riseL, minRise, "the loop in process did not learn (the task, not the protocol, is at fault)")
	}

	last := remote.steps[len(remote.steps)-1]
	assert.Equal(t, policy.Version(steps), last.Version)
	assert.Equal(t, policy.Version(steps), last.Served, "the sampler process serves the last published version")
	assert.Equal(t, policy.Version(steps), tr.Version())

	recs, err := steplog.ReadFile(filepath.Join(store, stepLogFile))
	require.NoError(t, err)
	rep, err := steplog.Audit(recs)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(steps), rep.Final)
	assert.Equal(t, []string{tr.ModelID()}, rep.Models)
	assert.Zero(t, rep.RolledBack)
	checked, _ := verifyStore(ctx, t, store)
	assert.GreaterOrEqual(t, checked, steps, "every published version is a checkpoint in the store")

	// Weight sync by version: a session of the sampler process bound to
	// version 1 asked for at least the final version (the tandem extension
	// min_policy_version) samples the newest version the trainer process
	// published, and says so.
	st, err := checkpoint.Open(store)
	require.NoError(t, err)
	cks, err := st.List(tr.ModelID())
	require.NoError(t, err)
	var v1 *policy.Ref
	for _, ck := range cks {
		if ck.Kind == policy.SamplerWeights && ck.Version == 1 {
			ref := ck.Ref()
			v1 = &ref
		}
	}
	require.NotNil(t, v1, "version 1 was published")
	old := sc.NewSampler(basemodel.Name)
	require.NoError(t, old.Load(ctx, *v1))
	prompt := problems(t)[0].(*rollout.SingleTurn).Prompt
	p := rlConfig("").Sampling
	out, err := old.Sample(ctx, prompt, 1, p)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(1), out.Version)
	out, err = old.SampleAtLeast(ctx, prompt, 1, p, steps)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(steps), out.Version)
}
