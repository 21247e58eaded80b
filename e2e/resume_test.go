package e2e

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/backend/tinker/resilient"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/tasks/arithmetic"
)

// TestResumeMatchesUninterrupted trains the same six supervised steps
// twice on the real engine in a trainer process: once without faults, once
// with the process SIGKILLed twice (between two steps, and between a
// step's forward_backward and its optim_step) and restarted, the client
// resuming from the last saved state with its optimizer and replaying what
// was lost. The losses of every step must match: nothing lost, nothing
// applied twice, the optimizer state carried over.
func TestResumeMatchesUninterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tandem command and runs server processes")
	}
	ctx := t.Context() // no deadline but go test's -timeout
	var data []rl.Datum
	for _, s := range []string{"What is 12 + 35? 47", "What is 3 + 4? 7", "What is 50 + 49? 99"} {
		seq, err := arithmetic.EncodePrompt(s)
		require.NoError(t, err)
		data = append(data, rl.Datum{ModelInput: rl.Tokens(seq[:len(seq)-1]), LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor(seq[1:])}})
	}
	const n = 6
	run := func(kills map[int]string) []float64 {
		p := startServe(t, "trainer", t.TempDir(), apiKey)
		opts := resilient.Options{
			Client: tinker.Options{BaseURL: p.url(), APIKey: apiKey, RetryInitial: 20 * time.Millisecond, RetryMax: 200 * time.Millisecond, RetryMaxElapsed: time.Second},
			Base:   basemodel.Name, Lora: lora, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), RecoverFor: recoverForever,
		}
		tr, err := resilient.NewTrainer(ctx, opts)
		require.NoError(t, err)
		defer tr.Close()
		crash := func() { p.kill(); p.start() }
		var losses []float64
		for i := range n {
			out, err := tr.ForwardBackward(ctx, data, rl.Loss{Name: rl.CrossEntropy}).Wait(ctx)
			require.NoError(t, err)
			losses = append(losses, out.Metrics["loss:sum"])
			if kills[i] == "before optim" {
				crash()
			}
			_, err = tr.OptimStep(ctx, rl.AdamParams{LearningRate: 5e-3}).Wait(ctx)
			require.NoError(t, err)
			// SaveForSampler runs after the automatic save_weights.
			_, err = tr.SaveForSampler(ctx, fmt.Sprintf("s%d", i)).Wait(ctx)
			require.NoError(t, err)
			if kills[i] == "after step" {
				crash()
			}
		}
		assert.Equal(t, len(kills), tr.Recoveries())
		return losses
	}
	clean := run(nil)
	faulty := run(map[int]string{1: "after step", 3: "before optim"})
	t.Logf("losses without faults: %v", clean)
	t.Logf("losses with two kills: %v", faulty)
	require.Len(t, faulty, n)
	for i := range clean {
		assert.InDelta(t, clean[i], faulty[i], 1e-9*max(1, clean[i]), "step %d", i+1)
	}
	assert.Less(t, clean[n-1], clean[0], "the steps train")
}
