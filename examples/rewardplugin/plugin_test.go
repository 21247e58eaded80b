// Package rewardplugin holds example reward plugins written in other
// languages; this test runs the Python one through tandem's plugin client.
package rewardplugin

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/reward/plugin"
)

func TestPythonPlugin(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	// Every request here is answered, so the timeout is one no answer
	// reaches (longer than go test's own -timeout): a slow Python start on
	// a loaded machine must not turn an answer into a timeout.
	p, err := plugin.NewProc(plugin.ProcConfig{Command: []string{py, "plugin.py"}, Timeout: time.Hour})
	require.NoError(t, err)
	defer p.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		prompt, completion string
		want               float64
	}{
		{"What is 12 + 35?", " 47", 1},
		{"What is 12 + 35?", " The answer is 47.", 1},
		{"What is 12 + 35?", " 48", 0},
		{"What is 9 * 8?", " 72", 1},
		{"What is 3 - 5?", " -2", 1},
	} {
		r, err := p.Score(ctx, plugin.Request{Prompt: tc.prompt, Completion: tc.completion})
		require.NoError(t, err, tc)
		assert.Equal(t, tc.want, r, tc)
	}
	_, err = p.Score(ctx, plugin.Request{Prompt: "Hello", Completion: "1"})
	var pe *plugin.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, plugin.KindRemote, pe.Kind)
	assert.Contains(t, pe.Msg, "not 'What is A op B?'")
}
