package rl

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigDefaults(t *testing.T) {
	t.Parallel()
	c := Config{GroupsPerBatch: 4, GroupSize: 2, MaxStaleness: 2}.WithDefaults()
	assert.Equal(t, Pace, c.StalePolicy)
	assert.Equal(t, 12, c.Workers, "GroupsPerBatch × (k+1)")
	assert.Equal(t, 12, c.BufferLimit)
	assert.Equal(t, 1, c.Substeps)
	assert.Equal(t, SamplingParams{MaxTokens: 256, Temperature: 1}, c.Sampling)
	assert.Equal(t, 30*time.Second, c.Watchdog)
	require.NoError(t, c.Validate())
	require.NoError(t, DefaultConfig().Validate())

	greedy := Config{GroupsPerBatch: 1, GroupSize: 1, Sampling: SamplingParams{TopK: 5}}.WithDefaults()
	assert.Equal(t, 0.0, greedy.Sampling.Temperature, "a partly set Sampling keeps its temperature")
}

func TestConfigValidateNamesFieldAndAllowed(t *testing.T) {
	t.Parallel()
	ok := Config{GroupsPerBatch: 4, GroupSize: 2}
	tests := []struct {
		name   string
		mutate func(*Config)
		want   []string
	}{
		{"groups", func(c *Config) { c.GroupsPerBatch = 0 }, []string{"GroupsPerBatch is 0", "at least 1"}},
		{"group size", func(c *Config) { c.GroupSize = 0 }, []string{"GroupSize is 0", "at least 1"}},
		{"staleness", func(c *Config) { c.MaxStaleness = -2 }, []string{"MaxStaleness is -2", "≥ 0"}},
		{"policy", func(c *Config) { c.StalePolicy = "keep" }, []string{`StalePolicy is "keep"`, "pace, drop, requeue"}},
		{"buffer", func(c *Config) { c.BufferLimit = 3 }, []string{"BufferLimit is 3", "GroupsPerBatch 4"}},
		{"buffer negative", func(c *Config) { c.BufferLimit = -1 }, []string{"BufferLimit is -1"}},
		{"workers", func(c *Config) { c.Workers = -1 }, []string{"Workers is -1"}},
		{"substeps", func(c *Config) { c.Substeps = 3 }, []string{"Substeps is 3", "divide GroupsPerBatch 4"}},
		{"steps", func(c *Config) { c.Steps = -1 }, []string{"Steps is -1"}},
		{"sampling", func(c *Config) { c.Sampling = SamplingParams{MaxTokens: 5, Temperature: -1} }, []string{"Sampling", "temperature"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := ok
			tt.mutate(&c)
			err := c.Validate()
			require.ErrorIs(t, err, ErrConfig)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestConfigJSONRoundTrip(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.MaxStaleness, c.StalePolicy, c.Substeps = 2, Requeue, 4
	b, err := json.Marshal(c)
	require.NoError(t, err)
	var back Config
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, c, back)
}

func TestIsTransient(t *testing.T) {
	t.Parallel()
	assert.True(t, IsTransient(ErrTransient))
	assert.False(t, IsTransient(nil))
	assert.False(t, IsTransient(assert.AnError))
}

// FuzzConfigJSON decodes arbitrary JSON as a Config (how saved runs are
// read back): Validate must never panic, and a valid config stays valid
// and unchanged through another round of defaults.
func FuzzConfigJSON(f *testing.F) {
	f.Add([]byte(`{"groups_per_batch":8,"group_size":4,"max_staleness":1,"stale_policy":"drop"}`))
	f.Add([]byte(`{"groups_per_batch":-1}`))
	f.Add([]byte(`{"groups_per_batch":4,"group_size":2,"buffer_limit":2,"substeps":3}`))
	f.Add([]byte(`{"groups_per_batch":1,"group_size":1,"sampling":{"max_tokens":1,"temperature":1e308}}`))
	f.Add([]byte(`{"groups_per_batch":1,"group_size":1,"kl_coef":0.1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var c Config
		if json.Unmarshal(b, &c) != nil {
			return
		}
		if err := c.Validate(); err != nil {
			require.ErrorIs(t, err, ErrConfig)
			return
		}
		d := c.WithDefaults()
		require.NoError(t, d.Validate())
		require.Equal(t, d, d.WithDefaults())
	})
}
