package tinker_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/servertest"
	"github.com/tandemrl/tandem/wire"
)

// TestSplitTrainerAndSampler runs a trainer-role server and a sampler-role
// server that share a checkpoint store (as two processes share a folder):
// the trainer's client publishes versions, the sampler's client serves them.
func TestSplitTrainerAndSampler(t *testing.T) {
	t.Parallel()
	be, store := &servertest.Backend{}, &servertest.Store{}
	start := func(role server.Role) *tinker.Client {
		srv, err := server.New(server.Config{APIKeys: []string{apiKey}, Role: role, PollWait: 50 * time.Millisecond},
			server.Options{Backend: be, Store: store})
		require.NoError(t, err)
		hs := httptest.NewServer(srv)
		c, err := tinker.New(context.Background(), tinker.Options{BaseURL: hs.URL, APIKey: apiKey, HTTPClient: hs.Client(), PollInterval: time.Millisecond})
		require.NoError(t, err)
		t.Cleanup(func() {
			require.NoError(t, c.Close())
			hs.Close()
			require.NoError(t, srv.Close(context.Background()))
		})
		return c
	}
	trainerC, samplerC := start(server.RoleTrainer), start(server.RoleSampler)
	ctx := context.Background()
	tr, err := trainerC.NewTrainer(ctx, base, wire.LoraConfig{})
	require.NoError(t, err)
	smp := samplerC.NewSampler(base)
	_, err = samplerC.NewTrainer(ctx, base, wire.LoraConfig{})
	require.Error(t, err, "the sampler server trains nothing")

	for step := 1; step <= 3; step++ {
		tr.ForwardBackward(ctx, []rl.Datum{datum(1)}, ce)
		tr.OptimStep(ctx, rl.AdamParams{LearningRate: 1})
		ref, err := tr.SaveForSampler(ctx, "v"+string(rune('0'+step))).Wait(ctx)
		require.NoError(t, err)
		require.NoError(t, smp.Load(ctx, ref))
		out, err := smp.Sample(ctx, rl.Tokens([]int{7}), 1, rl.SamplingParams{MaxTokens: 1})
		require.NoError(t, err)
		assert.Equal(t, policy.Version(step), out.Version)
		// The sampler serves the weights of that version: theta = step.
		assert.InDelta(t, onWire(samplerC, servertest.LogProb(float64(step), int64(out.Sequences[0].Tokens[0]))), out.Sequences[0].Logprobs[0], 1e-12)
	}
}
