package progress

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlainLinesWhenNotATerminal(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	d := New(&buf)
	require.False(t, d.Interactive())
	t0 := time.Unix(1000, 0)
	now := t0
	d.start, d.now = t0, func() time.Time { return now }
	now = t0.Add(10 * time.Second)
	acc := 0.5
	d.Update(Status{Step: 5, Total: 20, Reward: 0.25, Accuracy: &acc, MaxStaleness: 2, MeanStale: 0.75, TokensPerSec: 4321})
	d.Println("saved checkpoint")
	d.Done()
	lines := strings.Split(strings.TrimRight(buf.String(), "\n"), "\n")
	require.Len(t, lines, 2)
	assert.Contains(t, lines[0], "step 5/20")
	assert.Contains(t, lines[0], "reward 0.250")
	assert.Contains(t, lines[0], "acc 0.500")
	assert.Contains(t, lines[0], "max 2")
	assert.Contains(t, lines[0], "4.3k tok/s")
	// 10 s for 5 of 20 steps: 30 s to go.
	assert.Contains(t, lines[0], "ETA 30s")
	assert.NotContains(t, buf.String(), "\r")
	assert.Equal(t, "saved checkpoint", lines[1])
}

func TestTerminalRedrawsInPlace(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	d := New(&buf)
	d.tty = true
	d.Update(Status{Step: 1, Total: 2, TokensPerSec: 1e6})
	d.Update(Status{Step: 2, Total: 2})
	d.Done()
	out := buf.String()
	assert.Equal(t, 2, strings.Count(out, "\r"))
	assert.Contains(t, out, "1.0M tok/s")
	assert.True(t, strings.HasSuffix(out, "\n"))
}
