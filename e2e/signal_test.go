package e2e

import (
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeExitsCleanlyOnSignals: tandem serve shuts down gracefully and
// exits 0 on SIGINT and on SIGTERM.
func TestServeExitsCleanlyOnSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the tandem command")
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startServe(t, "sampler", t.TempDir(), apiKey)
			require.NoError(t, p.cmd.Process.Signal(sig))
			<-p.exited // a process that never exits is reported by go test's -timeout
			require.NoError(t, p.waitErr, "exit status after %v", sig)
		})
	}
}
