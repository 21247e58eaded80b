package loop

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/sim"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

func TestSyncRunZeroStalenessZeroGap(t *testing.T) {
	t.Parallel()
	tr := sim.NewTrainer(sim.TrainerConfig{})
	s := sim.NewSampler(sim.SamplerConfig{Tokens: 4})
	var c collector
	l, err := New(rl.Config{GroupsPerBatch: 4, GroupSize: 4, Steps: 10},
		Deps{Trainer: tr, Samplers: []rl.Sampler{s}, Dataset: newCountingDataset(1000, 1), Observer: c.observe})
	require.NoError(t, err)
	require.NoError(t, l.Run(context.Background()))
	rep := l.Report()
	assert.Equal(t, 10, rep.Steps)
	assert.Equal(t, policy.Version(10), rep.Version)
	steps := c.all()
	require.Len(t, steps, 10)
	for i, m := range steps {
		assert.Equal(t, i, m.Step)
		assert.Equal(t, policy.Version(i+1), m.Version)
		assert.Equal(t, []int{4}, m.Staleness, "k=0: every group fresh")
		assert.True(t, m.LogprobGapValid)
		assert.Zero(t, m.LogprobGap, "sampler and trainer at the same version agree")
		assert.Equal(t, 16, m.Samples)
		assert.Equal(t, 64, m.Tokens)
		assert.Equal(t, policy.Version(i+1), m.Served, "k=0 waits for the sampler")
		// The default algorithm is GRPO: it accounts for every group and
		// reports the importance ratio, 1 when sampler and trainer agree.
		assert.Equal(t, float64(m.Groups), m.Metrics["groups:kept"]+m.Metrics["groups:filtered_uniform"])
		assert.InDelta(t, 1, m.Metrics["ratio:mean"], 1e-9)
	}
	assert.Equal(t, int64(0), rep.Buffer.Dropped)
}

// TestStaleSamplerShowsGap: a sampler that never loads new weights (the
// classic silent weight-sync bug) shows as a log-prob gap.
func TestStaleSamplerShowsGap(t *testing.T) {
	t.Parallel()
	tr := sim.NewTrainer(sim.TrainerConfig{})
	s := &neverLoads{Sampler: sim.NewSampler(sim.SamplerConfig{Tokens: 4})}
	var c collector
	l, err := New(rl.Config{GroupsPerBatch: 2, GroupSize: 2, Steps: 3, MaxStaleness: 100, StalePolicy: rl.Drop},
		Deps{Trainer: tr, Samplers: []rl.Sampler{s}, Dataset: newCountingDataset(1000, 1), Observer: c.observe})
	require.NoError(t, err)
	require.NoError(t, l.Run(context.Background()))
	steps := c.all()
	require.Len(t, steps, 3)
	assert.Zero(t, steps[0].LogprobGap)
	assert.Greater(t, steps[2].LogprobGap, 0.1)
}

type neverLoads struct{ *sim.Sampler }

func (neverLoads) Load(context.Context, policy.Ref) error { return nil }

func TestInvalidConfigFailsAtConstruction(t *testing.T) {
	t.Parallel()
	deps := Deps{Trainer: sim.NewTrainer(sim.TrainerConfig{}), Samplers: []rl.Sampler{sim.NewSampler(sim.SamplerConfig{})}, Dataset: newCountingDataset(1, 1)}
	tests := []struct {
		name string
		cfg  rl.Config
		want []string
	}{
		{"negative staleness", rl.Config{GroupsPerBatch: 1, GroupSize: 1, MaxStaleness: -1}, []string{"MaxStaleness", "-1", "≥ 0"}},
		{"group size 0", rl.Config{GroupsPerBatch: 1, GroupSize: 0}, []string{"GroupSize", "0", "at least 1"}},
		{"batch larger than buffer", rl.Config{GroupsPerBatch: 8, GroupSize: 1, BufferLimit: 4}, []string{"BufferLimit", "4", "GroupsPerBatch 8"}},
		{"unknown policy", rl.Config{GroupsPerBatch: 1, GroupSize: 1, StalePolicy: "evict"}, []string{"StalePolicy", `"evict"`, "pace, drop, requeue"}},
		{"negative steps", rl.Config{GroupsPerBatch: 1, GroupSize: 1, Steps: -1}, []string{"Steps", "-1", "≥ 0"}},
		{"substeps", rl.Config{GroupsPerBatch: 3, GroupSize: 1, Substeps: 2}, []string{"Substeps", "divide"}},
		{"bad adam", rl.Config{GroupsPerBatch: 1, GroupSize: 1, Adam: rl.AdamParams{Beta1: 1.5}}, []string{"Adam", "beta1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tt.cfg, deps)
			require.ErrorIs(t, err, rl.ErrConfig)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	_, err := New(rl.Config{GroupsPerBatch: 1, GroupSize: 1}, Deps{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Trainer")
}

func TestDatasetExhaustionEndsRun(t *testing.T) {
	t.Parallel()
	l, err := New(rl.Config{GroupsPerBatch: 4, GroupSize: 2, MaxStaleness: 1},
		Deps{Trainer: sim.NewTrainer(sim.TrainerConfig{}), Samplers: []rl.Sampler{sim.NewSampler(sim.SamplerConfig{})}, Dataset: newCountingDataset(30, 1)})
	require.NoError(t, err)
	require.NoError(t, l.Run(context.Background()), "the run ends when the data runs out")
	rep := l.Report()
	assert.Equal(t, 7, rep.Steps, "30 prompts make 7 full batches of 4")
	assert.Len(t, rep.Leftover, 2)
	assert.Equal(t, int64(30), rep.Buffer.Accepted)
}

// tagged names its samples' replica, as samplerpool does.
type tagged struct {
	rl.Sampler
	name string
}

func (s tagged) Sample(ctx context.Context, p rl.ModelInput, n int, sp rl.SamplingParams) (rl.SampleOutput, error) {
	out, err := s.Sampler.Sample(ctx, p, n, sp)
	out.Replica = s.name
	return out, err
}

// offset shifts every sampled log-prob by d: a replica whose numbers
// differ from the trainer's (another dtype, a wrong --logprobs-mode).
type offset struct {
	rl.Sampler
	d float64
}

func (s offset) Sample(ctx context.Context, p rl.ModelInput, n int, sp rl.SamplingParams) (rl.SampleOutput, error) {
	out, err := s.Sampler.Sample(ctx, p, n, sp)
	for i := range out.Sequences {
		lp := append([]float64(nil), out.Sequences[i].Logprobs...)
		for j := range lp {
			lp[j] += s.d
		}
		out.Sequences[i].Logprobs = lp
	}
	return out, err
}

// TestReplicaLogprobGap: the gap is also reported per sampler replica, so
// the one replica whose log-probs are off stands out.
func TestReplicaLogprobGap(t *testing.T) {
	t.Parallel()
	tr := sim.NewTrainer(sim.TrainerConfig{})
	good := tagged{sim.NewSampler(sim.SamplerConfig{Tokens: 4}), "good"}
	off := tagged{offset{sim.NewSampler(sim.SamplerConfig{Tokens: 4}), 0.5}, "off"}
	var c collector
	l, err := New(rl.Config{GroupsPerBatch: 4, GroupSize: 2, Steps: 4},
		Deps{Trainer: tr, Samplers: []rl.Sampler{good, off}, Dataset: newCountingDataset(1000, 1), Observer: c.observe})
	require.NoError(t, err)
	require.NoError(t, l.Run(context.Background()))
	steps := c.all()
	require.Len(t, steps, 4)
	for _, m := range steps {
		require.Contains(t, m.ReplicaLogprobGap, "good")
		require.Contains(t, m.ReplicaLogprobGap, "off")
		assert.InDelta(t, 0, m.ReplicaLogprobGap["good"], 1e-9)
		assert.InDelta(t, 0.5, m.ReplicaLogprobGap["off"], 1e-6)
		assert.Greater(t, m.LogprobGap, 0.0)
		assert.Less(t, m.LogprobGap, 0.5, "the mean over both replicas lies between them")
	}
	single := tagged{sim.NewSampler(sim.SamplerConfig{Tokens: 4}), ""}
	l, err = New(rl.Config{GroupsPerBatch: 2, GroupSize: 2, Steps: 1}, Deps{Trainer: sim.NewTrainer(sim.TrainerConfig{}), Samplers: []rl.Sampler{single}, Dataset: newCountingDataset(10, 1), Observer: c.observe})
	require.NoError(t, err)
	require.NoError(t, l.Run(context.Background()))
	assert.Nil(t, c.all()[4].ReplicaLogprobGap, "no replica names, no per-replica gaps")
}
