package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/train"
)

// The -otel help names exactly the values setupOTel accepts.
func TestOTelHelpNamesAcceptedModes(t *testing.T) {
	cfg := train.DefaultConfig()
	cfg.Dir = t.TempDir()
	for _, mode := range []string{"file", "otlp", "off"} {
		assert.Contains(t, otelHelp, mode+" (", "help names %q", mode)
	}
	// file writes where the help says.
	shutdown, err := setupOTel(context.Background(), "file", cfg)
	require.NoError(t, err)
	require.NoError(t, shutdown(context.Background()))
	_, err = os.Stat(filepath.Join(cfg.Dir, cfg.Name+".otel.jsonl"))
	require.NoError(t, err, "file mode writes <dir>/<name>.otel.jsonl")
	assert.True(t, strings.Contains(otelHelp, "<dir>/<name>.otel.jsonl"))
	// off and the empty default install nothing.
	for _, mode := range []string{"off", ""} {
		shutdown, err := setupOTel(context.Background(), mode, cfg)
		require.NoError(t, err, "mode %q", mode)
		require.NoError(t, shutdown(context.Background()))
	}
	// Anything else is a usage error naming the accepted values.
	_, err = setupOTel(context.Background(), "stdout", cfg)
	var u usageError
	require.ErrorAs(t, err, &u)
	assert.Contains(t, err.Error(), "file, otlp or off")
}
