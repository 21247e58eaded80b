package resilient_test

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/backend/tinker/resilient"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/server/servertest"
)

// TestSamplerRecoversItsVersion: after a restart the sampler reopens its
// session on the adapter it served and keeps reporting that version; calls
// that fail together share one recovery, whether the server is back at
// once or drops requests first.
func TestSamplerRecoversItsVersion(t *testing.T) {
	t.Parallel()
	for _, drops := range []int{0, 3} {
		t.Run(map[int]string{0: "back at once", 3: "back after dropped requests"}[drops], func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := servertest.NewServer(t, nil)
			var l logs
			opts := options(s, &l)
			tr, err := resilient.NewTrainer(ctx, opts)
			require.NoError(t, err)
			defer tr.Close()
			require.Equal(t, policy.Version(1), step(t, tr, 2, 0.5))
			ref, err := tr.SaveForSampler(ctx, "v1").Wait(ctx)
			require.NoError(t, err)

			smp, err := resilient.NewSampler(ctx, opts)
			require.NoError(t, err)
			defer smp.Close()
			require.NoError(t, smp.Load(ctx, ref))
			prompt := rl.Tokens([]int{1, 2})
			p := rl.SamplingParams{MaxTokens: 2}
			before, err := smp.Sample(ctx, prompt, 2, p)
			require.NoError(t, err)
			require.Equal(t, policy.Version(1), before.Version)
			s.Restart(drops)

			const calls = 8
			var wg sync.WaitGroup
			outs := make([]rl.SampleOutput, calls)
			errs := make([]error, calls)
			for i := range outs {
				wg.Go(func() { outs[i], errs[i] = smp.Sample(ctx, prompt, 2, p) })
			}
			wg.Wait()
			for i := range outs {
				require.NoError(t, errs[i])
				assert.Equal(t, policy.Version(1), outs[i].Version)
				assert.Equal(t, before.Sequences[0].Logprobs, outs[i].Sequences[0].Logprobs, "the same weights after the restart")
			}
			assert.Equal(t, 1, smp.Recoveries(), "concurrent calls share one recovery")
			assert.Equal(t, drops, s.Drops(), "the calls found the server away for all the dropped requests")
			assert.Contains(t, l.String(), "resilient: sampler lost its session; recovering")
			assert.NotContains(t, l.String(), "e2e:")
		})
	}
}

// TestSamplerPassesCallErrorsThrough: a 404 for a checkpoint on a live
// session is the call's error, not a lost session; a refused call is not
// recovered from either.
func TestSamplerPassesCallErrorsThrough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var refusing atomic.Bool
	s := servertest.NewServer(t, refuse("asample", &refusing))
	smp, err := resilient.NewSampler(ctx, options(s, nil))
	require.NoError(t, err)
	defer smp.Close()
	err = smp.Load(ctx, policy.Ref{URI: "tinker://nobody/sampler_weights/nothing"})
	require.Error(t, err)
	assert.Zero(t, smp.Recoveries())

	refusing.Store(true)
	_, err = smp.Sample(ctx, rl.Tokens([]int{1}), 1, rl.SamplingParams{MaxTokens: 1})
	var se *tinker.StatusError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, http.StatusBadRequest, se.Status)
	assert.Zero(t, smp.Recoveries())
}
