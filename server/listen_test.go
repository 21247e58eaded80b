package server_test

import (
	"context"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/servertest"
)

func TestServeStopsWithContext(t *testing.T) {
	t.Parallel()
	srv, err := server.New(server.Config{APIKeys: []string{keyA}}, server.Options{Backend: &servertest.Backend{}})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()

	resp, err := http.Get("http://" + ln.Addr().String() + "/api/v1/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	// Serve must return; if it never does, go test's -timeout says so with
	// every goroutine's stack.
	cancel()
	assert.NoError(t, <-done)
	_, err = http.Get("http://" + ln.Addr().String() + "/api/v1/healthz")
	assert.Error(t, err, "no longer listening")
}
