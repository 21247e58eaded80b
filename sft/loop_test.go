package sft

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/enginetest"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeTrainer records what the loop asks of it. Datum i of the data set is
// recognised by its first token, i. The loss of a datum is 0.5 per weighted
// token.
type fakeTrainer struct {
	mu      sync.Mutex
	batches [][]int
	lrs     []float64
	saves   []string
	failAt  int // fail the forward-backward of this step (1-based), 0 = never
	version policy.Version
}

func (f *fakeTrainer) ForwardBackward(_ context.Context, data []rl.Datum, loss rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	f.mu.Lock()
	defer f.mu.Unlock()
	if loss.Name != rl.CrossEntropy {
		return rl.Failed[rl.ForwardBackwardOutput](fmt.Errorf("loss %s", loss.Name))
	}
	if len(f.batches)+1 == f.failAt {
		return rl.Failed[rl.ForwardBackwardOutput](errors.New("boom"))
	}
	ids := make([]int, len(data))
	for i, d := range data {
		ids[i] = d.ModelInput.Chunks[0].Tokens[0]
	}
	f.batches = append(f.batches, ids)
	return rl.Resolved(rl.ForwardBackwardOutput{Metrics: map[string]float64{"loss:sum": 0.5 * weightSum(data)}}, nil)
}

func (f *fakeTrainer) Forward(_ context.Context, data []rl.Datum, _ rl.Loss) *rl.Future[rl.ForwardBackwardOutput] {
	return rl.Resolved(rl.ForwardBackwardOutput{Metrics: map[string]float64{"loss:sum": 0.25 * weightSum(data)}}, nil)
}

func (f *fakeTrainer) OptimStep(_ context.Context, p rl.AdamParams) *rl.Future[rl.OptimStepOutput] {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lrs = append(f.lrs, p.LearningRate)
	f.version++
	return rl.Resolved(rl.OptimStepOutput{Version: f.version, Metrics: map[string]float64{"grad_norm": 1}}, nil)
}

func (f *fakeTrainer) SaveForSampler(context.Context, string) *rl.Future[policy.Ref] {
	return rl.Failed[policy.Ref](errors.New("not used"))
}

func (f *fakeTrainer) SaveState(_ context.Context, name string) *rl.Future[policy.Ref] {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.saves = append(f.saves, name)
	return rl.Resolved(policy.Ref{Name: name, Version: f.version}, nil)
}

func (f *fakeTrainer) LoadState(context.Context, policy.Ref, bool) *rl.Future[struct{}] {
	return rl.Resolved(struct{}{}, nil)
}

// numbered returns n datums; datum i starts with token i and trains 2
// tokens.
func numbered(t *testing.T, n int) []rl.Datum {
	t.Helper()
	out := make([]rl.Datum, n)
	for i := range out {
		d, err := Datum([]int{i}, []int{1, 2})
		require.NoError(t, err)
		out[i] = d
	}
	return out
}

func TestLoopSchedulesBatchesAndCheckpoints(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := Config{BatchSize: 4, Epochs: 3, Adam: rl.AdamParams{LearningRate: 0.01},
		Schedule: Schedule{WarmupSteps: 2, Decay: Cosine}, SaveEvery: 4, EvalEvery: 5, Seed: 3}
	data := numbered(t, 10) // 3 batches per epoch (4, 4, 2): 9 steps
	ft := &fakeTrainer{}
	var steps []StepMetrics
	var saved []int
	l, err := New(cfg, ft, data, Options{Eval: data[:3], OnStep: func(m StepMetrics) { steps = append(steps, m) },
		OnSave: func(step int, _ policy.Ref) { saved = append(saved, step) }})
	require.NoError(t, err)
	require.Equal(t, 9, l.TotalSteps())
	sum, err := l.Run(ctx)
	require.NoError(t, err)

	assert.Equal(t, 9, sum.Steps)
	assert.Equal(t, 0.5, sum.FinalLoss)
	assert.Equal(t, 0.25, sum.EvalLoss)
	assert.True(t, sum.Evaluated)
	_, err = json.Marshal(sum)
	require.NoError(t, err)
	require.Len(t, ft.lrs, 9)
	for s, lr := range ft.lrs {
		assert.InDelta(t, 0.01*cfg.Schedule.Factor(s, 9), lr, 1e-15, "step %d", s)
		assert.Equal(t, lr, steps[s].LearningRate)
		assert.Equal(t, s+1, steps[s].Step)
		assert.Equal(t, s/3, steps[s].Epoch)
	}
	// Each epoch shows every datum once, in an order that changes.
	for e := range 3 {
		seen := map[int]int{}
		for _, b := range ft.batches[3*e : 3*e+3] {
			for _, id := range b {
				seen[id]++
			}
		}
		assert.Len(t, seen, 10, "epoch %d", e)
		for id, n := range seen {
			assert.Equal(t, 1, n, "epoch %d datum %d", e, id)
		}
	}
	assert.NotEqual(t, ft.batches[0], ft.batches[3], "epochs are reshuffled")
	assert.Equal(t, []int{4, 4, 2, 4, 4, 2, 4, 4, 2}, func() (n []int) {
		for _, b := range ft.batches {
			n = append(n, len(b))
		}
		return n
	}())
	// Checkpoints every 4 steps and after the last; evaluation every 5 and
	// after the last.
	assert.Equal(t, []string{"sft-000004", "sft-000008", "sft-000009"}, ft.saves)
	assert.Equal(t, []int{4, 8, 9}, saved)
	for _, m := range steps {
		assert.Equal(t, m.Step == 5 || m.Step == 9, m.Evaluated, "step %d", m.Step)
		_, err := json.Marshal(m)
		require.NoError(t, err, "metrics serialize")
		assert.Equal(t, 2*float64(len(ft.batches[m.Step-1])), m.Tokens, "step %d: two trained tokens per datum", m.Step)
	}
	require.Len(t, sum.Checkpoints, 3)

	// Resuming at step 5 replays exactly steps 6..9 of the same run.
	ft2 := &fakeTrainer{}
	cfg.StartStep = 5
	l2, err := New(cfg, ft2, data, Options{})
	require.NoError(t, err)
	sum2, err := l2.Run(ctx)
	require.NoError(t, err)
	assert.Equal(t, ft.batches[5:], ft2.batches)
	assert.Equal(t, ft.lrs[5:], ft2.lrs)
	assert.Equal(t, []string{"sft-000008", "sft-000009"}, ft2.saves)
	assert.Equal(t, 9, sum2.Steps)
}

func TestLoopStopsAndValidates(t *testing.T) {
	t.Parallel()
	data := numbered(t, 5)
	ft := &fakeTrainer{failAt: 2}
	l, err := New(Config{BatchSize: 2, MaxSteps: 2, NoShuffle: true}, ft, data, Options{})
	require.NoError(t, err)
	assert.Equal(t, 2, l.TotalSteps())
	sum, err := l.Run(context.Background())
	require.ErrorContains(t, err, "sft: step 2: forward-backward: boom")
	assert.Equal(t, 1, sum.Steps)
	assert.Equal(t, [][]int{{0, 1}}, ft.batches, "no shuffle keeps the order")

	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("user stop"))
	l, err = New(Config{}, &fakeTrainer{}, data, Options{})
	require.NoError(t, err)
	_, err = l.Run(ctx)
	require.ErrorContains(t, err, "stopped before step 1: user stop")

	for _, tc := range []struct {
		cfg   Config
		field string
	}{
		{Config{BatchSize: -1}, "BatchSize"},
		{Config{Epochs: -2}, "Epochs"},
		{Config{MaxSteps: -1}, "MaxSteps"},
		{Config{SaveEvery: -1}, "SaveEvery"},
		{Config{EvalEvery: -1}, "EvalEvery"},
		{Config{StartStep: -1}, "StartStep"},
		{Config{SaveName: "a/b"}, "SaveName"},
		{Config{Adam: rl.AdamParams{LearningRate: -1}}, "learning_rate"},
		{Config{Schedule: Schedule{Decay: "step"}}, "Schedule.Decay"},
	} {
		_, err := New(tc.cfg, &fakeTrainer{}, data, Options{})
		require.ErrorIs(t, err, ErrConfig)
		assert.Contains(t, err.Error(), tc.field)
	}
	_, err = New(Config{}, &fakeTrainer{}, nil, Options{})
	require.ErrorIs(t, err, ErrNoExamples)
	_, err = New(Config{}, nil, data, Options{})
	require.Error(t, err)
}

// TestSFTReducesLoss trains a tiny embedded model on a handful of pairs and
// checks that the loss per token falls well below its start, and below the
// loss of the untrained model on the same data.
func TestSFTReducesLoss(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := enginetest.Model(t, 1, 32, 5)
	tr, err := local.NewTrainer(base, local.TrainerOptions{Run: "sft"})
	require.NoError(t, err)
	defer tr.Close()

	exs := []Example{{Prompt: "1+1=", Completion: "2"}, {Prompt: "2+2=", Completion: "4"},
		{Prompt: "3+3=", Completion: "6"}, {Prompt: "4+4=", Completion: "8"}}
	data, err := Datums(engine.Tokenizer{}, exs, Format{Prefix: []int{engine.BOS}, Suffix: []int{engine.Newline}, MaxTokens: base.Config.Context})
	require.NoError(t, err)
	before, err := Loss(ctx, tr, data)
	require.NoError(t, err)
	assert.InDelta(t, math.Log(engine.VocabSize), before, 0.5, "an untrained model is near uniform")

	var losses []float64
	l, err := New(Config{BatchSize: 2, Epochs: 40, Adam: rl.AdamParams{LearningRate: 1e-2},
		Schedule: Schedule{WarmupSteps: 5, Decay: Cosine, MinFactor: 0.1}}, tr, data,
		Options{Eval: data, OnStep: func(m StepMetrics) { losses = append(losses, m.Loss) }})
	require.NoError(t, err)
	sum, err := l.Run(ctx)
	require.NoError(t, err)
	after, err := Loss(ctx, tr, data)
	require.NoError(t, err)
	t.Logf("loss per token: before %.4f, first step %.4f, last step %.4f, after %.4f (%d steps)", before, losses[0], sum.FinalLoss, after, sum.Steps)
	assert.InDelta(t, before, losses[0], 0.05, "the first step's loss is the untrained loss")
	assert.Less(t, after, before/3)
	assert.InDelta(t, sum.EvalLoss, after, 1e-9)
}

// TestResumeIsExact saves state every 3 steps on the embedded engine, then
// restores the step-3 checkpoint (with the optimizer) into a fresh trainer
// and resumes at step 3: the resumed run ends with exactly the weights of
// the uninterrupted one.
func TestResumeIsExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	base := enginetest.Model(t, 1, 32, 9)
	store, err := checkpoint.Open(t.TempDir())
	require.NoError(t, err)
	newTrainer := func() *local.Trainer {
		tr, err := local.NewTrainer(base, local.TrainerOptions{Run: "sft", Store: store})
		require.NoError(t, err)
		t.Cleanup(func() { _ = tr.Close() })
		return tr
	}
	exs := []Example{{Prompt: "ab", Completion: "c"}, {Prompt: "de", Completion: "f"}, {Prompt: "gh", Completion: "i"},
		{Prompt: "jk", Completion: "l"}, {Prompt: "mn", Completion: "o"}}
	data, err := Datums(engine.Tokenizer{}, exs, Format{Prefix: []int{engine.BOS}})
	require.NoError(t, err)
	sc := Config{BatchSize: 2, Epochs: 2, SaveEvery: 3, Seed: 4, Adam: rl.AdamParams{LearningRate: 1e-2},
		Schedule: Schedule{WarmupSteps: 2, Decay: Linear}}

	full := newTrainer()
	l, err := New(sc, full, data, Options{})
	require.NoError(t, err)
	sum, err := l.Run(ctx)
	require.NoError(t, err)
	require.Equal(t, 6, sum.Steps)
	require.Len(t, sum.Checkpoints, 2)
	want, err := full.Forward(ctx, data, rl.Loss{Name: rl.CrossEntropy}).Wait(ctx)
	require.NoError(t, err)

	resumed := newTrainer()
	_, err = resumed.LoadState(ctx, sum.Checkpoints[0], true).Wait(ctx)
	require.NoError(t, err)
	sc.StartStep = 3
	sc.SaveName = "again"
	l, err = New(sc, resumed, data, Options{})
	require.NoError(t, err)
	_, err = l.Run(ctx)
	require.NoError(t, err)
	got, err := resumed.Forward(ctx, data, rl.Loss{Name: rl.CrossEntropy}).Wait(ctx)
	require.NoError(t, err)
	for i := range data {
		assert.Equal(t, want.LossFnOutputs[i][rl.InputLogprobs].Floats, got.LossFnOutputs[i][rl.InputLogprobs].Floats, "datum %d", i)
	}
}
