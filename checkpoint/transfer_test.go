package checkpoint

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/checkpoint/archive"
	"github.com/tandemrl/tandem/policy"
)

// server is a source store behind the archive handler, with a hook to
// misbehave per request.
type server struct {
	store    *Store
	srv      *httptest.Server
	requests atomic.Int64
	clock    atomic.Pointer[time.Time]
	// misbehave, if set, may answer request n (1-based) itself and
	// return true.
	misbehave func(n int64, w http.ResponseWriter, r *http.Request, h http.Handler) bool
}

func newServer(t *testing.T) *server {
	t.Helper()
	s := &server{store: newStore(t)}
	now := t0
	s.clock.Store(&now)
	h, err := NewHandler(s.store, Signer{Key: testKey}, HandlerOptions{Now: func() time.Time { return *s.clock.Load() }})
	require.NoError(t, err)
	inner := http.StripPrefix("/checkpoints", h)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.requests.Add(1)
		if s.misbehave != nil && s.misbehave(n, w, r, inner) {
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *server) source(t *testing.T, ck Checkpoint, gz bool) Source {
	t.Helper()
	src, err := s.store.Source(ck, SourceOptions{Kind: SourceURL, BaseURL: s.srv.URL + "/checkpoints/", Signer: Signer{Key: testKey}, Gzip: gz})
	require.NoError(t, err)
	return src
}

func fastRetries(n uint64) DownloadOptions {
	return DownloadOptions{
		NewBackOff: func() backoff.BackOff { return backoff.WithMaxRetries(&backoff.ZeroBackOff{}, n) },
		Now:        func() time.Time { return t0 },
	}
}

func TestSourceVolumeAndURL(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ck := mustSave(t, s.store, meta("r", policy.SamplerWeights, "000002", 2), 1)
	vol, err := s.store.Source(ck, SourceOptions{})
	require.NoError(t, err)
	assert.Equal(t, Source{Kind: SourceVolume, URI: "tinker://r/sampler_weights/000002", Version: 2, Size: ck.Size(), Path: ck.Dir}, vol)

	src := s.source(t, ck, true)
	assert.Equal(t, SourceURL, src.Kind)
	assert.Equal(t, t0.Add(DefaultTTL), src.Expires)
	u, err := url.Parse(src.URL)
	require.NoError(t, err)
	assert.Equal(t, "/checkpoints/r/sampler_weights/000002.tar.gz", u.Path)
	assert.Equal(t, strconv.FormatInt(t0.Add(DefaultTTL).Unix(), 10), u.Query().Get("expires"))
	assert.Len(t, u.Query().Get("sig"), 64)

	for name, opts := range map[string]SourceOptions{
		"kind":     {Kind: "s3"},
		"base URL": {Kind: SourceURL, BaseURL: "ftp://x", Signer: Signer{Key: testKey}},
		"no host":  {Kind: SourceURL, BaseURL: "/relative", Signer: Signer{Key: testKey}},
		"TTL":      {Kind: SourceURL, BaseURL: s.srv.URL, Signer: Signer{Key: testKey}, TTL: 30 * 24 * time.Hour},
		"key":      {Kind: SourceURL, BaseURL: s.srv.URL},
	} {
		_, err := s.store.Source(ck, opts)
		assert.Error(t, err, name)
	}
}

func TestHandlerDownloadRoundTrip(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	files := adapterFiles(3)
	files["optimizer/state.bin"] = strings.Repeat("m", 1000)
	m := meta("r", policy.State, "final", 7)
	m.Metrics = map[string]float64{"reward": 0.9}
	ck, err := s.store.Save(context.Background(), m, writeFiles(files))
	require.NoError(t, err)
	for _, gz := range []bool{false, true} {
		t.Run(map[bool]string{false: "tar", true: "gzip"}[gz], func(t *testing.T) {
			t.Parallel()
			src := s.source(t, ck, gz)
			dstRoot := t.TempDir()
			got, err := Download(context.Background(), src, dstRoot, fastRetries(0))
			require.NoError(t, err)
			assert.Equal(t, ck.Manifest, got.Manifest)
			require.NoError(t, got.Verify(context.Background()))
			dst, err := Open(dstRoot)
			require.NoError(t, err)
			again, err := dst.Get("r", policy.State, "final")
			require.NoError(t, err)
			assert.Equal(t, got, again)
			assert.Equal(t, []string{"r"}, rootEntries(t, dst), "no temp folder left")

			// Downloading the same checkpoint again is a no-op.
			got2, err := dst.Download(context.Background(), src, fastRetries(0))
			require.NoError(t, err)
			assert.Equal(t, got, got2)
			assert.Equal(t, []string{"r"}, rootEntries(t, dst))
		})
	}
}

func TestHandlerContentLengthIsExact(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ck := mustSave(t, s.store, meta("r", policy.State, "x", 1), 1)
	src := s.source(t, ck, false)
	resp, err := http.Get(src.URL)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, int64(len(body)), resp.ContentLength)
	assert.Equal(t, "application/x-tar", resp.Header.Get("Content-Type"))
	// The archive holds the manifest first, then the files in manifest order.
	tr := tar.NewReader(bytes.NewReader(body))
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		names = append(names, hdr.Name)
	}
	assert.Equal(t, append([]string{ManifestName}, fileNames(ck.Files)...), names)

	head, err := http.Head(src.URL)
	require.NoError(t, err)
	require.NoError(t, head.Body.Close())
	assert.Equal(t, http.StatusOK, head.StatusCode)
	assert.Equal(t, int64(len(body)), head.ContentLength)
}

func TestHandlerStatuses(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ck := mustSave(t, s.store, meta("r", policy.State, "x", 1), 1)
	good, err := url.Parse(s.source(t, ck, false).URL)
	require.NoError(t, err)
	signed := func(path string, exp time.Time) string {
		sig, err := Signer{Key: testKey}.Sign(path, exp)
		require.NoError(t, err)
		return s.srv.URL + "/checkpoints" + path + "?expires=" + strconv.FormatInt(exp.Unix(), 10) + "&sig=" + sig
	}
	q := good.Query()
	tests := []struct {
		name, method, url string
		status            int
		msg               string
	}{
		{"ok", "GET", good.String(), 200, ""},
		{"post", "POST", good.String(), 405, "GET and HEAD only"},
		{"no query", "GET", s.srv.URL + good.Path, 400, "expires=<unix seconds> and sig="},
		{"bad expires", "GET", s.srv.URL + good.Path + "?expires=soon&sig=" + q.Get("sig"), 400, "expires="},
		{"bad suffix", "GET", signed("/r/weights/x.zip", t0.Add(time.Hour)), 400, ".tar or .tar.gz"},
		{"traversal", "GET", s.srv.URL + "/checkpoints/r/weights/..%2f..%2fetc.tar?" + q.Encode(), 400, "want /<run>/<kind>/<name>"},
		{"dot name", "GET", signed("/r/weights/..tar", t0.Add(time.Hour)), 400, "checkpoint name"},
		{"bad kind", "GET", signed("/r/optimizer/x.tar", t0.Add(time.Hour)), 400, `kind "optimizer"`},
		{"tampered path", "GET", s.srv.URL + "/checkpoints/r/weights/y.tar?" + q.Encode(), 403, "bad signature"},
		{"tampered expiry", "GET", s.srv.URL + good.Path + "?expires=" + strconv.FormatInt(t0.Add(100*time.Hour).Unix(), 10) + "&sig=" + q.Get("sig"), 403, "bad signature"},
		{"expired", "GET", signed("/r/weights/x.tar", t0.Add(-time.Second)), 403, "expired"},
		{"not found", "GET", signed("/r/weights/nope.tar", t0.Add(time.Hour)), 404, "not found"},
	}
	for _, tc := range tests {
		req, err := http.NewRequest(tc.method, tc.url, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err, tc.name)
		body, _ := io.ReadAll(resp.Body)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, tc.status, resp.StatusCode, "%s: %s", tc.name, body)
		assert.Contains(t, string(body), tc.msg, tc.name)
	}
}

func TestDownloadRetriesTransientFailures(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ck := mustSave(t, s.store, meta("r", policy.SamplerWeights, "v", 1), 1)
	src := s.source(t, ck, true)
	s.misbehave = func(n int64, w http.ResponseWriter, r *http.Request, h http.Handler) bool {
		switch n {
		case 1:
			http.Error(w, "warming up", http.StatusServiceUnavailable)
		case 2:
			http.Error(w, "slow down", http.StatusTooManyRequests)
		case 3:
			// Send part of the archive, then drop the connection.
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			w.Header().Set("Content-Type", contentGzip)
			_, _ = w.Write(rec.Body.Bytes()[:rec.Body.Len()/2])
			w.(http.Flusher).Flush()
			panic(http.ErrAbortHandler)
		default:
			return false
		}
		return true
	}
	var retries []string
	opts := fastRetries(5)
	opts.OnRetry = func(err error, _ time.Duration) { retries = append(retries, err.Error()) }
	dst := newStore(t)
	got, err := dst.Download(context.Background(), src, opts)
	require.NoError(t, err)
	require.NoError(t, got.Verify(context.Background()))
	assert.Equal(t, int64(4), s.requests.Load())
	require.Len(t, retries, 3)
	assert.Contains(t, retries[0], "HTTP 503")
	assert.Contains(t, retries[1], "HTTP 429")
	assert.Contains(t, retries[2], "archive: read")
	assert.Equal(t, []string{"r"}, rootEntries(t, dst), "failed attempts left no temp folders")
}

func TestDownloadGivesUp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		setup    func(t *testing.T, s *server, ck Checkpoint, src *Source, opts *DownloadOptions)
		want     error
		msg      string
		requests int64
	}{
		{"persistent 500", func(t *testing.T, s *server, _ Checkpoint, _ *Source, _ *DownloadOptions) {
			s.misbehave = func(_ int64, w http.ResponseWriter, _ *http.Request, _ http.Handler) bool {
				http.Error(w, "broken", http.StatusInternalServerError)
				return true
			}
		}, nil, "HTTP 500: broken", 4},
		{"expired before asking", func(t *testing.T, s *server, _ Checkpoint, src *Source, opts *DownloadOptions) {
			opts.Now = func() time.Time { return src.Expires.Add(time.Second) }
		}, ErrExpired, "expired", 0},
		{"expired at the server", func(t *testing.T, s *server, _ Checkpoint, src *Source, _ *DownloadOptions) {
			later := t0.Add(24 * time.Hour)
			s.clock.Store(&later)
			src.Expires = time.Time{}
		}, ErrExpired, "HTTP 403", 1},
		{"bad signature", func(t *testing.T, s *server, _ Checkpoint, src *Source, _ *DownloadOptions) {
			src.URL = strings.Replace(src.URL, "sig=", "sig=00", 1)
		}, ErrBadSignature, "HTTP 403", 1},
		{"not found", func(t *testing.T, s *server, ck Checkpoint, _ *Source, _ *DownloadOptions) {
			require.NoError(t, s.store.Delete(ck.Run, ck.Kind, ck.Name))
		}, ErrNotFound, "HTTP 404", 1},
		{"too large by header", func(t *testing.T, s *server, _ Checkpoint, src *Source, opts *DownloadOptions) {
			*src = s.source(t, mustGet(t, s.store), false)
			opts.MaxBytes = 1000
		}, ErrTooLarge, "at most 1000", 1},
		{"too large by count", func(t *testing.T, s *server, _ Checkpoint, _ *Source, opts *DownloadOptions) {
			s.misbehave = func(_ int64, w http.ResponseWriter, r *http.Request, h http.Handler) bool {
				h.ServeHTTP(flushingWriter{w}, r) // chunked: no Content-Length
				return true
			}
			opts.MaxBytes = 200
		}, ErrTooLarge, "more than 200 bytes", 1},
		{"entry limits", func(t *testing.T, _ *server, _ Checkpoint, _ *Source, opts *DownloadOptions) {
			opts.Limits = archive.Limits{MaxFileSize: 100}
		}, archive.ErrTooLarge, "at most 100 allowed", 1},
		{"corrupt at the source", func(t *testing.T, _ *server, ck Checkpoint, _ *Source, _ *DownloadOptions) {
			p := ck.Path(AdapterSafetensors)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			b[0] ^= 0xff
			require.NoError(t, os.WriteFile(p, b, 0o644))
		}, ErrCorrupt, "sha256", 1},
		{"another checkpoint served", func(t *testing.T, _ *server, _ Checkpoint, src *Source, _ *DownloadOptions) {
			src.URI = "tinker://r/sampler_weights/other"
		}, ErrCorrupt, "want r/sampler_weights/other", 1},
		{"hostile archive", func(t *testing.T, s *server, _ Checkpoint, _ *Source, _ *DownloadOptions) {
			s.misbehave = func(_ int64, w http.ResponseWriter, _ *http.Request, _ http.Handler) bool {
				tw := tar.NewWriter(w)
				_ = tw.WriteHeader(&tar.Header{Name: "../../evil", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644})
				_, _ = tw.Write([]byte("x"))
				_ = tw.Close()
				return true
			}
		}, archive.ErrUnsafe, "'..'", 1},
		{"truncated at the source", func(t *testing.T, _ *server, ck Checkpoint, _ *Source, _ *DownloadOptions) {
			require.NoError(t, os.Truncate(ck.Path(AdapterSafetensors), 5))
		}, nil, "HTTP 500: checkpoint: corrupt", 4},
		{"connection refused", func(t *testing.T, _ *server, _ Checkpoint, src *Source, _ *DownloadOptions) {
			gone := httptest.NewServer(http.NotFoundHandler())
			gone.Close()
			u, err := url.Parse(src.URL)
			require.NoError(t, err)
			src.URL = gone.URL + u.RequestURI()
		}, nil, "connection refused", 0},
		{"bad source kind", func(t *testing.T, _ *server, _ Checkpoint, src *Source, _ *DownloadOptions) {
			src.Kind = "s3"
		}, nil, `source kind "s3"`, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newServer(t)
			ck := mustSave(t, s.store, meta("r", policy.SamplerWeights, "v", 1), 1)
			src := s.source(t, ck, true)
			opts := fastRetries(3)
			tc.setup(t, s, ck, &src, &opts)
			dst := newStore(t)
			_, err := dst.Download(context.Background(), src, opts)
			require.Error(t, err)
			if tc.want != nil {
				assert.ErrorIs(t, err, tc.want)
			}
			assert.Contains(t, err.Error(), tc.msg)
			assert.NotContains(t, err.Error(), "sig=", "errors do not leak the signature")
			assert.Equal(t, tc.requests, s.requests.Load(), "requests made")
			assert.Empty(t, rootEntries(t, dst), "nothing installed, no temp folder left")
		})
	}
}

func mustGet(t *testing.T, s *Store) Checkpoint {
	t.Helper()
	ck, err := s.Get("r", policy.SamplerWeights, "v")
	require.NoError(t, err)
	return ck
}

func TestDownloadRefusesADifferentCheckpointUnderTheSameName(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ck := mustSave(t, s.store, meta("r", policy.SamplerWeights, "v", 1), 1)
	dst := newStore(t)
	mustSave(t, dst, meta("r", policy.SamplerWeights, "v", 1), 2)
	_, err := dst.Download(context.Background(), s.source(t, ck, false), fastRetries(0))
	require.ErrorIs(t, err, ErrExists)
	assert.Equal(t, []string{"r"}, rootEntries(t, dst))
}

func TestDownloadStopsOnCancel(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ck := mustSave(t, s.store, meta("r", policy.SamplerWeights, "v", 1), 1)
	ctx, cancel := context.WithCancel(context.Background())
	release := make(chan struct{})
	s.misbehave = func(_ int64, w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		cancel()
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return true
	}
	defer close(release)
	dst := newStore(t)
	_, err := dst.Download(ctx, s.source(t, ck, false), fastRetries(5))
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int64(1), s.requests.Load())
	assert.Empty(t, rootEntries(t, dst))
}

// flushingWriter sends every write at once, so responses go out chunked.
type flushingWriter struct{ http.ResponseWriter }

func (f flushingWriter) Write(p []byte) (int, error) {
	n, err := f.ResponseWriter.Write(p)
	f.ResponseWriter.(http.Flusher).Flush()
	return n, err
}

func TestDownloadReportsProgress(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ck := mustSave(t, s.store, meta("r", policy.SamplerWeights, "v", 1), 1)
	src := s.source(t, ck, false)
	var calls int
	var last, total int64
	opts := fastRetries(0)
	opts.Progress = func(received, tot int64) {
		require.Greater(t, received, last, "progress only grows")
		calls++
		last, total = received, tot
	}
	_, err := newStore(t).Download(context.Background(), src, opts)
	require.NoError(t, err)
	want, err := tarSize(ck)
	require.NoError(t, err)
	assert.Positive(t, calls)
	assert.Equal(t, want, total)
	assert.Equal(t, want, last, "the whole archive was received")
}

// blockingWriter is a ResponseWriter whose first Write waits for release.
type blockingWriter struct {
	*httptest.ResponseRecorder
	started chan struct{}
	release chan struct{}
	once    atomic.Bool
}

func (b *blockingWriter) Write(p []byte) (int, error) {
	if b.once.CompareAndSwap(false, true) {
		close(b.started)
		<-b.release
	}
	return b.ResponseRecorder.Write(p)
}

func TestHandlerBoundsConcurrentStreams(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ck := mustSave(t, s, meta("r", policy.State, "x", 1), 1)
	h, err := NewHandler(s, Signer{Key: testKey}, HandlerOptions{MaxConcurrent: 1, Now: func() time.Time { return t0 }})
	require.NoError(t, err)
	src, err := s.Source(ck, SourceOptions{Kind: SourceURL, BaseURL: "http://trainer", Signer: Signer{Key: testKey}})
	require.NoError(t, err)
	u, err := url.Parse(src.URL)
	require.NoError(t, err)

	first := &blockingWriter{ResponseRecorder: httptest.NewRecorder(), started: make(chan struct{}), release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(first, httptest.NewRequest(http.MethodGet, u.RequestURI(), nil))
	}()
	<-first.started
	second := httptest.NewRecorder()
	h.ServeHTTP(second, httptest.NewRequest(http.MethodGet, u.RequestURI(), nil))
	assert.Equal(t, http.StatusServiceUnavailable, second.Code)
	assert.Equal(t, "1", second.Header().Get("Retry-After"))
	head := httptest.NewRecorder()
	h.ServeHTTP(head, httptest.NewRequest(http.MethodHead, u.RequestURI(), nil))
	assert.Equal(t, http.StatusOK, head.Code, "HEAD streams nothing and is not bounded")

	close(first.release)
	<-done
	assert.Equal(t, http.StatusOK, first.Code)
	third := httptest.NewRecorder()
	h.ServeHTTP(third, httptest.NewRequest(http.MethodGet, u.RequestURI(), nil))
	assert.Equal(t, http.StatusOK, third.Code, "the slot is free again")
	assert.Equal(t, first.Body.Bytes(), third.Body.Bytes())
}
