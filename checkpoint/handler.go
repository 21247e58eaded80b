package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/tandemrl/tandem/checkpoint/archive"
)

// HandlerOptions tunes NewHandler. The zero value gives the defaults.
type HandlerOptions struct {
	// Now returns the current time for expiry checks; default time.Now.
	Now func() time.Time
	// MaxConcurrent bounds the archives streamed at once; further
	// requests get 503 with Retry-After (Download retries them).
	// Default DefaultMaxConcurrent.
	MaxConcurrent int
}

// DefaultMaxConcurrent is HandlerOptions.MaxConcurrent's default.
const DefaultMaxConcurrent = 8

// Handler serves checkpoint archives at /<run>/<kind>/<name>.tar[.gz]
// ?expires=<unix>&sig=<hex>, for URLs that Store.Source signed with the same
// key. Mount it under a prefix with http.StripPrefix; the path it sees is
// the path that was signed. It answers GET and HEAD only: 400 for a bad
// path or query, 403 for a bad or expired signature (checked before the
// store is touched), 404 for a missing checkpoint, 405 for other methods,
// 503 when HandlerOptions.MaxConcurrent archives are already streaming.
// The archive holds manifest.json then the files in manifest order; if a
// file fails mid-stream the response is aborted, never ended cleanly. It is
// safe for concurrent use.
type Handler struct {
	store  *Store
	signer Signer
	now    func() time.Time
	slots  chan struct{} // one token per stream in progress
}

// NewHandler returns a handler serving store's checkpoints for URLs signed
// by signer.
func NewHandler(store *Store, signer Signer, opts HandlerOptions) (*Handler, error) {
	if err := signer.Validate(); err != nil {
		return nil, fmt.Errorf("checkpoint: handler: %w", err)
	}
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	n := opts.MaxConcurrent
	if n <= 0 {
		n = DefaultMaxConcurrent
	}
	return &Handler{store: store, signer: signer, now: now, slots: make(chan struct{}, n)}, nil
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "checkpoint archives answer GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	run, kind, name, gz, err := parseArchivePath(r.URL.Path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := r.URL.Query()
	expires, err := strconv.ParseInt(q.Get("expires"), 10, 64)
	if err != nil || q.Get("sig") == "" {
		http.Error(w, "checkpoint: query needs expires=<unix seconds> and sig=<hex signature>", http.StatusBadRequest)
		return
	}
	if err := h.signer.Verify(r.URL.Path, expires, q.Get("sig"), h.now()); err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	ck, err := h.store.Get(run, kind, name)
	switch {
	case errors.Is(err, ErrNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	names := make([]string, 0, len(ck.Files)+1)
	names = append(names, ManifestName)
	for _, f := range ck.Files {
		names = append(names, f.Name)
	}
	size, err := tarSize(ck)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	suffix, ctype := tarSuffix, contentTar
	if gz {
		suffix, ctype = tgzSuffix, contentGzip
	}
	hdr.Set("Content-Type", ctype)
	hdr.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name+suffix))
	if !gz && size > 0 {
		hdr.Set("Content-Length", strconv.FormatInt(size, 10))
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		hdr.Del("Content-Length")
		hdr.Set("Retry-After", "1")
		http.Error(w, fmt.Sprintf("checkpoint: %d archives already streaming; retry shortly", cap(h.slots)), http.StatusServiceUnavailable)
		return
	}
	if err := archive.Write(r.Context(), w, ck.Dir, names, archive.WriteOptions{Gzip: gz}); err != nil {
		if !errors.Is(err, context.Canceled) {
			// The status line is gone; abort so the client sees a broken
			// transfer instead of a short archive that ends cleanly.
			panic(http.ErrAbortHandler)
		}
	}
}

// tarSize checks that every file of ck has the size its manifest records
// (so the archive can be streamed as promised) and returns the exact length
// of the uncompressed archive Write makes, or 0 when a name is too long for
// a plain USTAR header (over 100 bytes) and the length is not predicted.
func tarSize(ck Checkpoint) (int64, error) {
	block := func(n int64) int64 { return 512 + (n+511)/512*512 }
	mi, err := statSize(ck.Path(ManifestName))
	if err != nil {
		return 0, err
	}
	total := block(mi) + 1024 // manifest entry and the two-block trailer
	predictable := true
	for _, f := range ck.Files {
		n, err := statSize(ck.Path(f.Name))
		if err != nil {
			return 0, &CorruptError{Dir: ck.Dir, File: f.Name, Problem: err.Error()}
		}
		if n != f.Size {
			return 0, &CorruptError{Dir: ck.Dir, File: f.Name, Problem: fmt.Sprintf("size %d, manifest says %d", n, f.Size)}
		}
		predictable = predictable && len(f.Name) <= 100
		total += block(f.Size)
	}
	if !predictable {
		return 0, nil
	}
	return total, nil
}
