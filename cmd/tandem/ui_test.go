package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUIFlagChecks(t *testing.T) {
	t.Setenv(EnvAPIKey, "") // not parallel: the environment is shared
	tests := []struct {
		name    string
		f       uiFlags
		wantErr string
	}{
		{"loopback", uiFlags{listen: "127.0.0.1:8080"}, ""},
		{"localhost", uiFlags{listen: "localhost:0"}, ""},
		{"ipv6 loopback", uiFlags{listen: "[::1]:8080"}, ""},
		{"remote refused", uiFlags{listen: "0.0.0.0:8080", apiKey: "k"}, "allow-remote"},
		{"remote without key", uiFlags{listen: "0.0.0.0:8080", allowRemote: true}, "api-key"},
		{"remote with key", uiFlags{listen: "0.0.0.0:8080", allowRemote: true, apiKey: "k"}, ""},
		{"no port", uiFlags{listen: "127.0.0.1"}, "host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkUIFlags(&tt.f)
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.wantErr)
			var u usageError
			assert.ErrorAs(t, err, &u)
		})
	}
}

func TestUICommandRefusesRemote(t *testing.T) {
	t.Setenv(EnvAPIKey, "")
	err := run(t.Context(), []string{"ui", "-listen", "0.0.0.0:0", "-runs", t.TempDir()}, nil, nil)
	assert.ErrorContains(t, err, "allow-remote")
	assert.Equal(t, 2, exitCode(err))
	err = run(t.Context(), []string{"ui", "-runs", t.TempDir() + "/missing", "-listen", "127.0.0.1:0"}, nil, nil)
	assert.ErrorContains(t, err, "not a folder")
}

// train -ui serves the dashboard over the runs folder while the job runs,
// and stops it with the job.
func TestTrainServesDashboard(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	dir := t.TempDir()
	go func() {
		// Long enough that the job is still running when the page is
		// fetched; it is cancelled right after.
		err := run(ctx, []string{"train", "-ui", "-ui-listen", "127.0.0.1:0", "-base", tinyBase(t), "-dir", dir, "-steps", "100000",
			"-groups", "2", "-group-size", "2", "-max-tokens", "4", "-eval-problems", "2", "-quiet"}, io.Discard, pw)
		pw.Close()
		done <- err
	}()
	url := dashboardURL(t, pr, "train -ui")
	resp, err := http.Get(url + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	cancel()
	err = <-done // cut short: its error is the cancellation's
	require.ErrorIs(t, err, context.Canceled, "the job was still running when cancelled")
	_, err = http.Get(url + "/")
	assert.Error(t, err, "the dashboard stops with the job")
	_, _, err = runCLI("train", "-ui", "-ui-listen", "0.0.0.0:0", "-dir", dir)
	require.ErrorContains(t, err, "not a loopback address")
}

// serve -ui serves the dashboard over -ui-runs beside the API, and stops
// it with the server; a non-loopback -ui-listen is refused.
func TestServeServesDashboard(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := t.TempDir() + "/runs" // created by serve -ui
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"serve", "-listen", "127.0.0.1:0", "-api-key", "test-key-0123", "-store", t.TempDir(),
			"-ui", "-ui-listen", "127.0.0.1:0", "-ui-runs", runs}, io.Discard, pw)
		pw.Close()
		done <- err
	}()
	url := dashboardURL(t, pr, "serve -ui")
	resp, err := http.Get(url + "/")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	cancel()
	require.NoError(t, <-done)
	_, err = http.Get(url + "/")
	assert.Error(t, err, "the dashboard stops with the server")

	// Already cancelled: were the address let through, serve would return
	// at once instead of serving on.
	gone, stop := context.WithCancel(context.Background())
	stop()
	err = run(gone, []string{"serve", "-api-key", "test-key-0123", "-listen", "127.0.0.1:0", "-ui", "-ui-listen", "0.0.0.0:0", "-ui-runs", runs}, io.Discard, io.Discard)
	require.ErrorContains(t, err, "loopback")
	assert.Equal(t, 2, exitCode(err))
}

// dashboardURL reads a command's output up to its "dashboard: URL" line
// and returns the URL; the rest of the output is discarded as it comes.
func dashboardURL(t *testing.T, out io.Reader, what string) string {
	t.Helper()
	sc := bufio.NewScanner(out)
	var url string
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "dashboard: "); ok {
			url = strings.Fields(u)[0]
			break
		}
	}
	require.NotEmpty(t, url, "%s printed no dashboard line", what)
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return url
}
