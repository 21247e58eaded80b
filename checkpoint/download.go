package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/tandemrl/tandem/checkpoint/archive"
)

// ErrTooLarge reports a download beyond DownloadOptions.MaxBytes.
var ErrTooLarge = errors.New("checkpoint: download too large")

// DownloadOptions tunes Download. The zero value gives the defaults below.
type DownloadOptions struct {
	// Client makes the requests; default a client with no overall timeout
	// (the context bounds each download).
	Client *http.Client
	// MaxBytes bounds the archive's size on the wire; default 8 GiB.
	MaxBytes int64
	// Limits bound the archive's entries; zero fields take archive's
	// defaults.
	Limits archive.Limits
	// NewBackOff makes the retry schedule for one download; default
	// exponential from 200 ms to 10 s, at most 6 retries.
	NewBackOff func() backoff.BackOff
	// OnRetry, if set, is told of each failed attempt that will be retried
	// and the wait before the next. It must not block.
	OnRetry func(err error, wait time.Duration)
	// Now returns the current time for the expiry check; default time.Now.
	Now func() time.Time
	// Progress, if set, is called as archive bytes arrive with the bytes
	// received so far in this attempt and the expected total (-1 when the
	// server did not say). It runs on the downloading goroutine and must
	// not block.
	Progress func(received, total int64)
}

// DefaultMaxBytes bounds a download when DownloadOptions.MaxBytes is zero.
const DefaultMaxBytes = 8 << 30

func (o DownloadOptions) withDefaults() DownloadOptions {
	if o.Client == nil {
		o.Client = &http.Client{}
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.NewBackOff == nil {
		o.NewBackOff = func() backoff.BackOff {
			return backoff.WithMaxRetries(backoff.NewExponentialBackOff(
				backoff.WithInitialInterval(200*time.Millisecond),
				backoff.WithMaxInterval(10*time.Second),
				backoff.WithMaxElapsedTime(0)), 6)
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Download fetches the checkpoint src points at into the store at dstRoot
// (opened, and created if needed); see Store.Download.
func Download(ctx context.Context, src Source, dstRoot string, opts DownloadOptions) (Checkpoint, error) {
	s, err := Open(dstRoot)
	if err != nil {
		return Checkpoint{}, err
	}
	return s.Download(ctx, src, opts)
}

// Download fetches the checkpoint src points at and installs it atomically
// in this store under the same run, kind and name, after checking every
// file against the manifest. A SourceURL is fetched over HTTP with ctx,
// bounded by opts.MaxBytes and opts.Limits, and retried with backoff on
// transient failures (connection errors, a broken transfer, 408, 429, 5xx);
// a bad archive, a corrupt checkpoint, an expired URL or another 4xx is
// final. A SourceVolume is copied from its folder. If the same checkpoint
// is already installed Download returns it; a different one under the same
// name is ErrExists. Cost: one transfer (per attempt) and one read of every
// byte.
func (s *Store) Download(ctx context.Context, src Source, opts DownloadOptions) (Checkpoint, error) {
	opts = opts.withDefaults()
	var want *URI
	if src.URI != "" {
		u, err := ParseURI(src.URI)
		if err != nil {
			return Checkpoint{}, fmt.Errorf("checkpoint: download: %w", err)
		}
		if u.Scheme != SchemeLocal {
			want = &u
		}
	}
	switch src.Kind {
	case SourceVolume:
		return s.copyFrom(ctx, src.Path, want)
	case SourceURL:
	default:
		return Checkpoint{}, fmt.Errorf("checkpoint: download: source kind %q: want %q or %q", src.Kind, SourceVolume, SourceURL)
	}
	if !src.Expires.IsZero() && opts.Now().After(src.Expires) {
		return Checkpoint{}, fmt.Errorf("checkpoint: download %s: %w at %s", src.URI, ErrExpired, src.Expires.Format(time.RFC3339))
	}
	var last error
	op := func() (Checkpoint, error) {
		ck, err := s.fetch(ctx, src.URL, want, opts)
		last = err
		return ck, err
	}
	ck, err := backoff.RetryNotifyWithData(op, backoff.WithContext(opts.NewBackOff(), ctx), opts.OnRetry)
	if err != nil {
		if ctx.Err() != nil && last != nil && !errors.Is(last, ctx.Err()) {
			return Checkpoint{}, fmt.Errorf("checkpoint: download %s: %w (last attempt: %v)", redact(src.URL), context.Cause(ctx), last)
		}
		return Checkpoint{}, fmt.Errorf("checkpoint: download %s: %w", redact(src.URL), err)
	}
	return ck, nil
}

// fetch makes one attempt. Errors not worth retrying are wrapped with
// backoff.Permanent.
func (s *Store) fetch(ctx context.Context, rawURL string, want *URI, opts DownloadOptions) (_ Checkpoint, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return Checkpoint{}, backoff.Permanent(fmt.Errorf("build request: %w", err))
	}
	resp, err := opts.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return Checkpoint{}, backoff.Permanent(context.Cause(ctx))
		}
		var ue *url.Error
		if errors.As(err, &ue) {
			ue.URL = redact(ue.URL) // keep the signature out of messages
		}
		return Checkpoint{}, err // connection-level: transient
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		err := fmt.Errorf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
		switch {
		case resp.StatusCode == http.StatusForbidden && strings.Contains(string(msg), "expired"):
			return Checkpoint{}, backoff.Permanent(fmt.Errorf("%w: %w", ErrExpired, err))
		case resp.StatusCode == http.StatusForbidden:
			return Checkpoint{}, backoff.Permanent(fmt.Errorf("%w: %w", ErrBadSignature, err))
		case resp.StatusCode == http.StatusNotFound:
			return Checkpoint{}, backoff.Permanent(fmt.Errorf("%w: %w", ErrNotFound, err))
		case transientStatus(resp.StatusCode):
			return Checkpoint{}, err
		default:
			return Checkpoint{}, backoff.Permanent(err)
		}
	}
	if resp.ContentLength > opts.MaxBytes {
		return Checkpoint{}, backoff.Permanent(fmt.Errorf("%w: %d bytes, at most %d allowed", ErrTooLarge, resp.ContentLength, opts.MaxBytes))
	}
	tmp, err := s.mkTemp("download")
	if err != nil {
		return Checkpoint{}, backoff.Permanent(err)
	}
	defer removeOnError(tmp, &err)
	body := &boundedReader{r: resp.Body, left: opts.MaxBytes, max: opts.MaxBytes, total: resp.ContentLength, progress: opts.Progress}
	if _, err := archive.Extract(ctx, body, tmp, opts.Limits); err != nil {
		var re *archive.ReadError
		switch {
		case ctx.Err() != nil:
			return Checkpoint{}, backoff.Permanent(context.Cause(ctx))
		case errors.Is(err, ErrTooLarge):
			return Checkpoint{}, backoff.Permanent(err)
		case errors.As(err, &re):
			return Checkpoint{}, err // broken transfer: transient
		default:
			return Checkpoint{}, backoff.Permanent(err)
		}
	}
	ck, err := s.installTemp(ctx, tmp, want)
	if err != nil {
		return Checkpoint{}, backoff.Permanent(err)
	}
	return ck, nil
}

func transientStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// redact drops a URL's query (its signature) for error messages.
func redact(u string) string {
	if i := strings.IndexByte(u, '?'); i >= 0 {
		return u[:i] + "?…"
	}
	return u
}

// boundedReader fails with ErrTooLarge once more than max bytes are read,
// and reports progress.
type boundedReader struct {
	r         io.Reader
	left, max int64
	total     int64
	progress  func(received, total int64)
}

func (b *boundedReader) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, b.max)
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if b.progress != nil && n > 0 {
		b.progress(b.max-b.left, b.total)
	}
	if b.left < 0 {
		return n, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, b.max)
	}
	return n, err
}

// copyFrom installs a copy of the checkpoint in folder dir.
func (s *Store) copyFrom(ctx context.Context, dir string, want *URI) (_ Checkpoint, err error) {
	src, err := OpenDir(dir)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: download from volume: %w", err)
	}
	tmp, err := s.mkTemp("copy")
	if err != nil {
		return Checkpoint{}, err
	}
	defer removeOnError(tmp, &err)
	for _, name := range append([]string{ManifestName}, fileNames(src.Files)...) {
		if err := copyFile(ctx, src.Path(name), filepath.Join(tmp, filepath.FromSlash(name))); err != nil {
			return Checkpoint{}, fmt.Errorf("checkpoint: download from volume %s: %w", dir, err)
		}
	}
	ck, err := s.installTemp(ctx, tmp, want)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: download from volume %s: %w", dir, err)
	}
	return ck, nil
}

func fileNames(files []File) []string {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Name
	}
	return names
}

// copyFile copies a regular file to a new file at dst, creating dst's
// folder; it does not sync.
func copyFile(ctx context.Context, src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, ctxReader{ctx: ctx, r: in})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// removeOnError removes the temp folder tmp if *err is set. On success tmp
// has been renamed into place (or removed); after a panic it stays, as after
// a crash, for Clean.
func removeOnError(tmp string, err *error) {
	if *err != nil {
		_ = os.RemoveAll(tmp)
	}
}
