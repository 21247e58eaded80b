package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/server/steplog"
)

func TestServeRefusesUnsafeStarts(t *testing.T) {
	store := t.TempDir()
	cases := []struct {
		name string
		env  string
		args []string
		want string
	}{
		{"no key", "", []string{"-store", store}, "no API key"},
		{"short key", "", []string{"-store", store, "-api-key", "short"}, "at least 8"},
		{"all interfaces", "", []string{"-store", store, "-api-key", "k-12345678", "-listen", ":0"}, "not a loopback address"},
		{"public address", "", []string{"-store", store, "-api-key", "k-12345678", "-listen", "192.0.2.1:0"}, "-allow-remote"},
		{"bad listen", "", []string{"-store", store, "-api-key", "k-12345678", "-listen", "nonsense"}, "want host:port"},
		{"bad role", "k-12345678", []string{"-store", store, "-role", "judge"}, "role \"judge\" unknown"},
		{"no threads", "k-12345678", []string{"-store", store, "-threads", "0"}, "-threads 0"},
		{"bad peer", "k-12345678", []string{"-store", store, "-listen", "127.0.0.1:0", "-fetch-from", "trainer:8000"}, "want http://"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv(EnvAPIKey, c.env)
			_, _, err := runCLI(append([]string{"serve"}, c.args...)...)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Equal(t, 2, exitCode(err), "a refused start is a usage error")
		})
	}
}

func TestIsLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1": true, "127.0.0.9": true, "::1": true, "localhost": true, "LOCALHOST": true,
		"": false, "0.0.0.0": false, "::": false, "10.0.0.1": false, "example.com": false,
	} {
		assert.Equal(t, want, isLoopback(host), host)
	}
}

// TestServeAnswersAndShutsDown starts serve on a free loopback port with the
// key from the environment, calls healthz and an authenticated endpoint,
// then cancels (as SIGINT does) and expects a clean return.
func TestServeAnswersAndShutsDown(t *testing.T) {
	const key = "test-key-123456"
	t.Setenv(EnvAPIKey, key)
	store := t.TempDir()
	// A checkpoint write a crash cut short long ago, and one that may still
	// be going on in another process.
	stale, fresh := filepath.Join(store, ".tmp-crashed"), filepath.Join(store, ".tmp-writing")
	require.NoError(t, os.MkdirAll(stale, 0o755))
	require.NoError(t, os.MkdirAll(fresh, 0o755))
	old := time.Now().Add(-2 * staleTemp)
	require.NoError(t, os.Chtimes(stale, old, old))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := run(ctx, []string{"serve", "-listen", "127.0.0.1:0", "-store", store, "-base", tinyBase(t), "-threads", "1", "-role", "sampler"}, pw, io.Discard)
		pw.Close()
		done <- err
	}()
	sc := bufio.NewScanner(pr)
	require.True(t, sc.Scan(), "serve printed nothing")
	line := sc.Text()
	require.True(t, strings.HasPrefix(line, ListeningPrefix), line)
	addr := strings.Fields(strings.TrimPrefix(line, ListeningPrefix))[0]
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	assert.NoDirExists(t, stale, "serve removes stale temporary folders at start")
	assert.DirExists(t, fresh, "but not recent ones")

	get := func(path, key string) int {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
		require.NoError(t, err)
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, get("/api/v1/healthz", ""))
	assert.Equal(t, http.StatusOK, get("/api/v1/get_server_capabilities", key))
	assert.Equal(t, http.StatusUnauthorized, get("/api/v1/get_server_capabilities", "wrong-key-000"))

	// Archive download: the API redirects to a signed URL this same
	// process answers; the archive installs and verifies in another store.
	st, err := checkpoint.Open(store)
	require.NoError(t, err)
	_, err = st.Save(ctx, checkpoint.Meta{Run: "r1", Name: "x", Kind: policy.SamplerWeights, Version: 3}, func(dir string) error {
		return os.WriteFile(filepath.Join(dir, "adapter_model.safetensors"), []byte("weights"), 0o644)
	})
	require.NoError(t, err)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/api/v1/training_runs/r1/checkpoints/sampler_weights/x/archive", nil)
	require.NoError(t, err)
	req.Header.Set("X-API-Key", key)
	resp, err := noRedirect.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusFound, resp.StatusCode)
	loc := resp.Header.Get("Location")
	require.True(t, strings.HasPrefix(loc, "http://"+addr+archivePrefix+"/"), loc)
	src, err := checkpoint.SourceFromURL(loc)
	require.NoError(t, err)
	other, err := checkpoint.Open(t.TempDir())
	require.NoError(t, err)
	got, err := other.Download(ctx, src, checkpoint.DownloadOptions{})
	require.NoError(t, err)
	require.NoError(t, got.Verify(ctx))
	assert.Equal(t, policy.Version(3), got.Version)
	tampered := strings.Replace(loc, "sig=", "sig=00", 1)
	assert.Equal(t, http.StatusForbidden, func() int {
		r, err := http.Get(tampered)
		require.NoError(t, err)
		r.Body.Close()
		return r.StatusCode
	}(), "a tampered signature is refused")

	// serve must stop; if it never does, go test's -timeout says so with
	// every goroutine's stack.
	cancel()
	require.NoError(t, <-done)
	recs, err := steplog.ReadFile(filepath.Join(store, StepLogFile))
	require.NoError(t, err, "the step log file exists even when nothing trained")
	assert.Empty(t, recs)
}
