package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"serve", "-listen", "127.0.0.1:0", "-store", t.TempDir(), "-threads", "1", "-role", "sampler"}, pw, io.Discard)
		pw.Close()
		done <- err
	}()
	sc := bufio.NewScanner(pr)
	require.True(t, sc.Scan(), "serve printed nothing")
	url := "http://" + strings.Fields(strings.TrimPrefix(sc.Text(), ListeningPrefix))[0]
	go func() { _, _ = io.Copy(io.Discard, pr) }()

	out, _, err := runCLI("train", "-sampler-url", url, "-dir", t.TempDir(), "-steps", "3", "-groups", "2", "-group-size", "4",
		"-max-tokens", "6", "-eval-problems", "3", "-max-staleness", "0", "-quiet")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var sum struct {
		Steps          int     `json:"steps"`
		Samples        int     `json:"samples"`
		MeanLogprobGap float64 `json:"mean_logprob_gap"`
		Ledger         struct {
			Totals map[string]int `json:"totals"`
		} `json:"ledger"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &sum))
	assert.Equal(t, 3, sum.Steps)
	assert.Equal(t, 3*2*4, sum.Samples)
	assert.Less(t, sum.MeanLogprobGap, 1e-4, "the server samples the version the trainer published")
	assert.Positive(t, sum.Ledger.Totals["trained"])
	cancel()
	require.NoError(t, <-done)
}
