package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// train -sampler-url: the loop samples through backend/openai from a
// tandem serve sampler process's OpenAI surface, which loads each version
// the in-process trainer publishes from the run's checkpoint store.
// Synchronous, the sampler's log-probs are the trainer's.
func TestTrainWithRemoteSampler(t *testing.T) {
	const key = "test-key-remote-sampler-1"
	t.Setenv(EnvAPIKey, key)
	url := startServe(t, "-store", t.TempDir(), "-threads", "1", "-role", "sampler")

	out, _, err := runCLI("train", "-sampler-url", url, "-dir", t.TempDir(), "-steps", "3", "-groups", "2", "-group-size", "4",
		"-max-tokens", "6", "-eval-problems", "3", "-max-staleness", "0", "-quiet")
	require.NoError(t, err)
	var sum struct {
		Steps          int     `json:"steps"`
		Samples        int     `json:"samples"`
		MeanLogprobGap float64 `json:"mean_logprob_gap"`
		Ledger         struct {
			Totals map[string]int `json:"totals"`
		} `json:"ledger"`
	}
	decodeSummary(t, out, &sum)
	assert.Equal(t, 3, sum.Steps)
	assert.Equal(t, 3*2*4, sum.Samples)
	assert.Less(t, sum.MeanLogprobGap, 1e-4, "the server samples the version the trainer published")
	assert.Positive(t, sum.Ledger.Totals["trained"])
}
