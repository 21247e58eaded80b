package e2e

import (
	"syscall"
	"testing"
	"time"

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
			select {
			case <-p.exited:
				require.NoError(t, p.waitErr, "exit status after %v", sig)
			case <-time.After(20 * time.Second):
				t.Fatalf("still running 20 s after %v", sig)
			}
		})
	}
}
