package runlog

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunWritesConfigMetricsAndPlots(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	r, err := Open(dir, map[string]any{"lr": 1e-3, "name": "t"})
	require.NoError(t, err)
	for i := range 5 {
		acc := float64(i) / 5
		rec := Record{Step: i, Version: int64(i), RewardMean: float64(i) / 10, Staleness: map[int]int{0: 3, 1: i}, TokensPerSec: 100 + float64(i), SamplesPerSec: 10}
		if i%2 == 0 {
			rec.Accuracy = &acc
		}
		require.NoError(t, r.Log(rec))
	}
	require.NoError(t, r.Close())

	cfg, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	require.NoError(t, err)
	assert.Contains(t, string(cfg), `"lr": 0.001`)

	recs, err := ReadMetricsFile(filepath.Join(dir, MetricsFile))
	require.NoError(t, err)
	require.Len(t, recs, 5)
	assert.Equal(t, 4, recs[4].Staleness[1])
	assert.Nil(t, recs[1].Accuracy)
	for _, name := range []string{"reward", "staleness", "throughput"} {
		for _, ext := range []string{".svg", ".png"} {
			st, err := os.Stat(filepath.Join(dir, PlotsDir, name+ext))
			require.NoError(t, err, name+ext)
			assert.Greater(t, st.Size(), int64(500), name+ext)
		}
	}

	// Reopening keeps the earlier records and appends.
	r2, err := Open(dir, map[string]any{"lr": 1e-3})
	require.NoError(t, err)
	require.NoError(t, r2.Log(Record{Step: 5}))
	assert.Len(t, r2.Records(), 6)
	require.NoError(t, r2.Close())
}

func TestLogRejectsNonFinite(t *testing.T) {
	t.Parallel()
	r, err := Open(t.TempDir(), struct{}{})
	require.NoError(t, err)
	defer r.Close()
	err = r.Log(Record{Step: 1, RewardMean: math.NaN()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "reward_mean")
}

func TestReadMetricsNamesBadLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"{\"step\":1}\n{\"step\":\"two\"}\n", "line 2"},
		{"{\"step\":1}\n\n{\"stepp\":3}\n", "line 3"},
		{"{\"step\":1,\"dropped\":-1}\n", "line 1"},
		{"not json\n", "line 1"},
	} {
		_, err := ReadMetrics(strings.NewReader(tc.in))
		require.Error(t, err, tc.in)
		assert.Contains(t, err.Error(), tc.want)
	}
}

func FuzzReadMetrics(f *testing.F) {
	f.Add([]byte("{\"step\":1,\"staleness\":{\"0\":2}}\n"))
	f.Add([]byte("{\"step\":1,\"accuracy\":0.5}\n{}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := ReadMetrics(strings.NewReader(string(b)))
		if err == nil {
			for _, r := range recs {
				require.NoError(t, r.Validate())
			}
		}
	})
}
