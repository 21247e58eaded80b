package main

import (
	"bufio"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// startServe runs `tandem serve args…` in this process until the test ends
// and returns its URL (http://host:port, from the line it prints when it
// listens). The server is stopped, and its error checked, at cleanup.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, append([]string{"serve", "-listen", "127.0.0.1:0"}, args...), pw, io.Discard)
		pw.Close()
		done <- err
	}()
	sc := bufio.NewScanner(pr)
	require.True(t, sc.Scan(), "serve printed nothing")
	url := "http://" + strings.Fields(strings.TrimPrefix(sc.Text(), ListeningPrefix))[0]
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return url
}
