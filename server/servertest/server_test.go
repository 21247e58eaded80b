package servertest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/server/servertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestServerRestart: a restart forgets the sessions, drops exactly the
// requests it was told to, unseen by the middleware, and keeps the
// middleware and the address.
func TestServerRestart(t *testing.T) {
	t.Parallel()
	var seen atomic.Int32
	s := servertest.NewServer(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen.Add(1)
			next.ServeHTTP(w, r)
		})
	})
	// No connection is reused, so the transport never resends a dropped
	// request on its own: each post is one request.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	post := func(endpoint, body string) (int, []byte, error) {
		req, err := http.NewRequest(http.MethodPost, s.HTTP.URL+"/api/v1/"+endpoint, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("X-API-Key", servertest.APIKey)
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, b, err
	}

	status, b, err := post("create_session", `{"type":"create_session"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, "%s", b)
	var sess struct {
		ID string `json:"session_id"`
	}
	require.NoError(t, json.Unmarshal(b, &sess))
	beat := fmt.Sprintf(`{"type":"session_heartbeat","session_id":%q}`, sess.ID)
	status, b, err = post("session_heartbeat", beat)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, status, "%s", b)

	before := s.Current()
	s.Restart(2)
	assert.NotSame(t, before, s.Current())
	for i := range 2 {
		_, _, err := post("session_heartbeat", beat)
		assert.Error(t, err, "request %d after the restart is dropped", i+1)
	}
	assert.Equal(t, 2, s.Drops())
	status, b, err = post("session_heartbeat", beat)
	require.NoError(t, err)
	assert.Equal(t, http.StatusNotFound, status, "the restarted server does not know the session: %s", b)
	assert.Equal(t, 2, s.Drops())
	assert.Equal(t, int32(3), seen.Load(), "the middleware saw every answered request and no dropped one")
}
