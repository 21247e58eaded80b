package plugin

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestMain doubles as the plugin: with TANDEM_PLUGIN_MODE set, the test
// binary serves the protocol on stdin/stdout in that mode.
func TestMain(m *testing.M) {
	if mode := os.Getenv("TANDEM_PLUGIN_MODE"); mode != "" {
		servePlugin(mode)
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// servePlugin answers reward = number of characters of the completion, or
// misbehaves as mode says.
func servePlugin(mode string) {
	sc := bufio.NewScanner(os.Stdin)
	n := 0
	for sc.Scan() {
		var req Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			fmt.Println(`{"error":"bad request"}`)
			continue
		}
		n++
		switch {
		case mode == "nan":
			fmt.Printf(`{"id": %d, "reward": NaN}`+"\n", req.ID)
		case mode == "string":
			fmt.Printf(`{"id": %d, "reward": "high"}`+"\n", req.ID)
		case mode == "garbage":
			fmt.Println("hello, I am not JSON")
		case mode == "hang":
			// Read on, answer nothing: any timeout is the right outcome,
			// however fast or slow the machine, and a closed stdin still
			// ends the process.
		case mode == "crash" && req.Completion == "crash":
			fmt.Fprintln(os.Stderr, "plugin: boom")
			os.Exit(3)
		case mode == "remote":
			fmt.Printf(`{"id": %d, "error": "cannot score %s"}`+"\n", req.ID, req.Completion)
		default:
			fmt.Printf(`{"id": %d, "reward": %d}`+"\n", req.ID, len(req.Completion))
		}
	}
}

// Timeouts the tests give the plugin. A plugin that answers gets one no
// answer can reach (longer than go test's own -timeout, 10 min by default),
// so however slow a loaded machine and a race-instrumented subprocess are,
// the answer is what gets reported; only a plugin that never answers (mode
// "hang") gets a short one, and for it any timeout is the right outcome.
const (
	noTimeout  = time.Hour
	anyTimeout = time.Millisecond
)

func selfPlugin(t *testing.T, mode string, timeout time.Duration) *Proc {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	p, err := NewProc(ProcConfig{Command: []string{exe}, Env: []string{"TANDEM_PLUGIN_MODE=" + mode}, Timeout: timeout, MaxInFlight: 4})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

func TestProcScoresConcurrently(t *testing.T) {
	p := selfPlugin(t, "ok", noTimeout)
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := strings.Repeat("x", i)
			r, err := p.Score(context.Background(), Request{Prompt: "p", Completion: c})
			assert.NoError(t, err)
			assert.Equal(t, float64(i), r)
		}()
	}
	wg.Wait()
}

func TestProcBadAnswers(t *testing.T) {
	for _, tc := range []struct {
		mode    string
		timeout time.Duration
		kind    Kind
		msg     string
	}{
		{"nan", noTimeout, KindGarbage, "NaN"},
		{"string", noTimeout, KindGarbage, "is a string, not a number"},
		{"garbage", noTimeout, KindGarbage, "not a JSON object"},
		{"remote", noTimeout, KindRemote, "cannot score abc"},
		{"hang", anyTimeout, KindTimeout, "no answer within " + anyTimeout.String()},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			p := selfPlugin(t, tc.mode, tc.timeout)
			_, err := p.Score(context.Background(), Request{Completion: "abc"})
			var pe *Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.kind, pe.Kind)
			assert.Contains(t, pe.Error(), tc.msg)
			assert.Contains(t, pe.Error(), "request 1")
		})
	}
}

func TestProcRestartsAfterCrashAndHang(t *testing.T) {
	p := selfPlugin(t, "crash", noTimeout)
	r, err := p.Score(context.Background(), Request{Completion: "ab"})
	require.NoError(t, err)
	assert.Equal(t, 2.0, r)
	_, err = p.Score(context.Background(), Request{Completion: "crash"})
	var pe *Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, KindCrash, pe.Kind)
	assert.Contains(t, pe.Msg, "plugin: boom", "stderr is reported")
	// The next request gets a fresh process.
	r, err = p.Score(context.Background(), Request{Completion: "abcd"})
	require.NoError(t, err)
	assert.Equal(t, 4.0, r)

	h := selfPlugin(t, "hang", anyTimeout)
	for range 2 {
		_, err := h.Score(context.Background(), Request{Completion: "x"})
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, KindTimeout, pe.Kind)
	}
}

func TestProcHonoursContextAndClose(t *testing.T) {
	// The plugin never answers and its own timeout cannot come first, so
	// the context's end, whenever it comes, is what Score reports.
	p := selfPlugin(t, "hang", noTimeout)
	ctx, cancel := context.WithTimeout(context.Background(), anyTimeout)
	defer cancel()
	_, err := p.Score(ctx, Request{Completion: "x"})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, p.Close())
	_, err = p.Score(context.Background(), Request{})
	require.ErrorIs(t, err, ErrClosed)
}

func TestProcConfigErrors(t *testing.T) {
	_, err := NewProc(ProcConfig{})
	require.ErrorContains(t, err, "Command is empty")
	p, err := NewProc(ProcConfig{Command: []string{"/nonexistent/plugin"}})
	require.NoError(t, err)
	_, err = p.Score(context.Background(), Request{})
	var pe *Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, KindCrash, pe.Kind)
	assert.Contains(t, pe.Msg, "/nonexistent/plugin")
	require.NoError(t, p.Close())
}

func TestHTTPPlugin(t *testing.T) {
	// A "hang" request is held until the test ends: it never answers.
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req Request
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, "bad", 400)
			return
		}
		switch req.Completion {
		case "nan":
			fmt.Fprint(w, `{"reward": NaN}`)
		case "text":
			fmt.Fprint(w, `{"reward": "1"}`)
		case "500":
			http.Error(w, "internal trouble", 500)
		case "hang":
			select {
			case <-r.Context().Done():
			case <-release:
			}
		case "wrongid":
			fmt.Fprintf(w, `{"id": %d, "reward": 1}`, req.ID+100)
		default:
			fmt.Fprintf(w, `{"id": %d, "reward": %d}`, req.ID, len(req.Completion))
		}
	}))
	defer srv.Close()
	defer close(release) // before srv.Close, which waits for the handlers
	h, err := NewHTTP(HTTPConfig{URL: srv.URL, Timeout: noTimeout})
	require.NoError(t, err)
	hung, err := NewHTTP(HTTPConfig{URL: srv.URL, Timeout: anyTimeout})
	require.NoError(t, err)
	r, err := h.Score(context.Background(), Request{Completion: "hello"})
	require.NoError(t, err)
	assert.Equal(t, 5.0, r)
	for _, tc := range []struct {
		in   string
		p    *HTTP
		kind Kind
		msg  string
	}{
		{"nan", h, KindGarbage, "NaN"},
		{"text", h, KindGarbage, "not a number"},
		{"500", h, KindRemote, "HTTP 500: internal trouble"},
		{"hang", hung, KindTimeout, "no answer within " + anyTimeout.String()},
		{"wrongid", h, KindGarbage, "carries id"},
	} {
		_, err := tc.p.Score(context.Background(), Request{Completion: tc.in})
		var pe *Error
		require.ErrorAs(t, err, &pe, tc.in)
		assert.Equal(t, tc.kind, pe.Kind, tc.in)
		assert.Contains(t, pe.Error(), tc.msg, tc.in)
	}
	_, err = NewHTTP(HTTPConfig{URL: "ftp://x"})
	require.ErrorContains(t, err, "http or https")
	srv.CloseClientConnections()
}

func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range []string{`{"id":1,"reward":0.5}`, `{"id":1,"reward":NaN}`, `{"error":"x"}`, `{"reward":"1"}`, `[]`, `{"id":-1,"reward":1e400}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, r, remote, err := decodeAnswer(b)
		if err == nil && remote == "" {
			require.False(t, math.IsNaN(r) || math.IsInf(r, 0), "non-finite reward %v accepted", r)
		}
	})
}
