package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/runlog"
)

// testCtx is the test's context, ending a little before the test's
// deadline when it has one.
func testCtx(t *testing.T) context.Context {
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		c, cancel := context.WithDeadline(ctx, d.Add(-5*time.Second))
		t.Cleanup(cancel)
		ctx = c
	}
	return ctx
}

func TestEventsDeliverAppendedLine(t *testing.T) {
	t.Parallel()
	h, root := newFixtureHandler(t, Options{PollInterval: 5 * time.Millisecond})
	srv := httptest.NewServer(h)
	defer srv.Close()
	path := filepath.Join(root, "live", runlog.MetricsFile)
	st, err := os.Stat(path)
	require.NoError(t, err)

	ctx := testCtx(t)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/runs/live/events?offset="+strconv.FormatInt(st.Size(), 10), nil)
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

	// Append one good line, half of another, then the rest: the stream
	// sends each only once it is complete.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	defer f.Close()
	b, err := json.Marshal(record(12))
	require.NoError(t, err)
	_, err = f.Write(append(b, '\n'))
	require.NoError(t, err)
	b13, err := json.Marshal(record(13))
	require.NoError(t, err)
	_, err = f.Write(b13[:10])
	require.NoError(t, err)

	events := readEvents(t, bufio.NewReader(resp.Body))
	ev := <-events
	require.Equal(t, "metrics", ev.name)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(ev.data), &got))
	assert.EqualValues(t, 12, got["step"])
	assert.EqualValues(t, st.Size()+int64(len(b)+1), ev.id)

	_, err = f.Write(append(b13[10:], '\n'))
	require.NoError(t, err)
	ev = <-events
	require.Equal(t, "metrics", ev.name)
	require.NoError(t, json.Unmarshal([]byte(ev.data), &got))
	assert.EqualValues(t, 13, got["step"])
}

type event struct {
	name, data string
	id         int64
}

// readEvents parses the stream in a goroutine the test owns; it ends when
// the body is closed (the test's context ending closes it too).
func readEvents(t *testing.T, r *bufio.Reader) <-chan event {
	out := make(chan event)
	done := make(chan struct{})
	t.Cleanup(func() { <-done })
	go func() {
		defer close(done)
		defer close(out)
		var ev event
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case line == "":
				if ev.name != "" {
					select {
					case out <- ev:
					case <-t.Context().Done(): // canceled before Cleanup runs
						return
					}
				}
				ev = event{}
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			case strings.HasPrefix(line, "id: "):
				ev.id, _ = strconv.ParseInt(line[4:], 10, 64)
			}
		}
	}()
	return out
}
