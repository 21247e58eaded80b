package runlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func readSampleLines(t *testing.T, path string) []Sample {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []Sample
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s Sample
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(&s), sc.Text())
		out = append(out, s)
	}
	require.NoError(t, sc.Err())
	return out
}

func TestSampleLogAppendsLines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l, err := OpenSamples(dir)
	require.NoError(t, err)
	first := []Sample{
		{Step: 0, Group: 0, Prompt: "What is 1 + 2?", Completion: " 3", Reward: 1, Version: 0},
		{Step: 0, Group: 0, Prompt: "What is 1 + 2?", Completion: " 4\n\"quoted\"", Reward: 0, Version: 0, Replica: "r1"},
	}
	require.NoError(t, l.Log(first))
	// Lines are on disk as soon as Log returns, before Close.
	assert.Equal(t, first, readSampleLines(t, filepath.Join(dir, SamplesFile)))
	second := []Sample{{Step: 1, Group: 3, Prompt: "p", Completion: "c", Reward: 0.5, Version: 0, Staleness: 1}}
	require.NoError(t, l.Log(second))
	require.NoError(t, l.Close())
	require.NoError(t, l.Close(), "a second Close is a no-op")
	assert.Equal(t, append(first, second...), readSampleLines(t, filepath.Join(dir, SamplesFile)))
	assert.ErrorContains(t, l.Log(second), "after close")

	// Reopening appends.
	l, err = OpenSamples(dir)
	require.NoError(t, err)
	require.NoError(t, l.Log(second))
	require.NoError(t, l.Close())
	assert.Len(t, readSampleLines(t, filepath.Join(dir, SamplesFile)), 4)
}

func TestSampleLogRejectsBadSamples(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    Sample
		want string
	}{
		{"nan reward", Sample{Reward: math.NaN()}, "finite"},
		{"inf reward", Sample{Reward: math.Inf(1)}, "finite"},
		{"negative staleness", Sample{Staleness: -1}, "negative"},
		{"negative step", Sample{Step: -1}, "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			l, err := OpenSamples(dir)
			require.NoError(t, err)
			defer l.Close()
			good := Sample{Prompt: "ok"}
			err = l.Log([]Sample{good, tt.s})
			assert.ErrorContains(t, err, tt.want)
			st, err := os.Stat(filepath.Join(dir, SamplesFile))
			require.NoError(t, err)
			assert.Zero(t, st.Size(), "nothing of a rejected batch is written")
		})
	}
}
