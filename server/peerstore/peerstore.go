// Package peerstore lets a server serve checkpoints another tandem server
// saved when the two share no folder: a sampler process on one machine,
// its trainer on another. It is a server.CheckpointStore over a local
// checkpoint folder (package ckptstore) that, when a checkpoint is not
// there, asks the peer for it — GET …/training_runs/{run}/checkpoints/
// {kind}/{name}/archive, the Tinker REST download, which a tandem peer
// answers with a signed, expiring URL — downloads the archive, verifies
// and installs it atomically, records the caller as its owner, and
// resolves it locally from then on.
package peerstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/ckptstore"
	"github.com/tandemrl/tandem/wire"
)

// ErrConfig is matched by every configuration error.
var ErrConfig = errors.New("peerstore: bad config")

// Options configure a Store.
type Options struct {
	// PeerURL is the base URL of the server to fetch from, e.g.
	// http://trainer:8000 (required).
	PeerURL string
	// APIKey is sent to the peer (required): the peer must know the
	// checkpoint as this key's.
	APIKey string
	// HTTPClient makes the requests; default one with a 10 s timeout for
	// the archive link (downloads are bounded by their context).
	HTTPClient *http.Client
	// Download tunes the transfers.
	Download checkpoint.DownloadOptions
}

// Store is a ckptstore.Store that fetches missing checkpoints from a peer.
// It keeps the local store's Record, ArchiveURL and Delete (so it can in
// turn be a peer). Safe for concurrent use; concurrent requests for one
// missing checkpoint share one download.
type Store struct {
	*ckptstore.Store
	st   *checkpoint.Store
	opts Options

	mu       sync.Mutex
	inflight map[string]*fetch
}

type fetch struct {
	done chan struct{}
	err  error
}

var (
	_ server.CheckpointStore    = (*Store)(nil)
	_ server.CheckpointRecorder = (*Store)(nil)
	_ server.ArchiveLinker      = (*Store)(nil)
)

// New returns a Store over the folder st (adapted by local) fetching from
// opts.PeerURL.
func New(local *ckptstore.Store, st *checkpoint.Store, opts Options) (*Store, error) {
	if local == nil || st == nil {
		return nil, fmt.Errorf("%w: no local store", ErrConfig)
	}
	if !strings.HasPrefix(opts.PeerURL, "http://") && !strings.HasPrefix(opts.PeerURL, "https://") {
		return nil, fmt.Errorf("%w: peer URL %q; want http://host:port or https://…", ErrConfig, opts.PeerURL)
	}
	if opts.APIKey == "" {
		return nil, fmt.Errorf("%w: no API key for the peer", ErrConfig)
	}
	opts.PeerURL = strings.TrimSuffix(opts.PeerURL, "/")
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	return &Store{Store: local, st: st, opts: opts, inflight: map[string]*fetch{}}, nil
}

// Resolve returns owner's checkpoint at p from the local folder, fetching
// it from the peer first when it is not there.
func (s *Store) Resolve(ctx context.Context, owner string, p wire.TinkerPath) (server.Checkpoint, error) {
	ck, err := s.Store.Resolve(ctx, owner, p)
	if err == nil || !errors.Is(err, ckptstore.ErrNotFound) {
		return ck, err
	}
	if err := s.fetchOnce(ctx, owner, p); err != nil {
		return server.Checkpoint{}, err
	}
	return s.Store.Resolve(ctx, owner, p)
}

// fetchOnce downloads p, sharing a download already under way.
func (s *Store) fetchOnce(ctx context.Context, owner string, p wire.TinkerPath) error {
	key := owner + "\x00" + p.String()
	s.mu.Lock()
	f, ok := s.inflight[key]
	if !ok {
		f = &fetch{done: make(chan struct{})}
		s.inflight[key] = f
	}
	s.mu.Unlock()
	if ok {
		select {
		case <-f.done:
			return f.err
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	f.err = s.fetch(ctx, owner, p)
	s.mu.Lock()
	delete(s.inflight, key)
	s.mu.Unlock()
	close(f.done)
	return f.err
}

// fetch asks the peer for p's archive link, downloads it and records owner.
func (s *Store) fetch(ctx context.Context, owner string, p wire.TinkerPath) error {
	link, err := s.archiveLink(ctx, p)
	if err != nil {
		return err
	}
	src, err := checkpoint.SourceFromURL(link)
	if err != nil {
		return fmt.Errorf("peerstore: %s: the peer's archive link: %w", p, err)
	}
	ck, err := s.st.Download(ctx, src, s.opts.Download)
	if err != nil {
		return fmt.Errorf("peerstore: download %s from %s: %w", p, s.opts.PeerURL, err)
	}
	if ck.Run != p.Run || string(ck.Kind) != p.Kind || ck.Name != p.Name {
		return fmt.Errorf("peerstore: %s: the peer sent %s/%s/%s", p, ck.Run, ck.Kind, ck.Name)
	}
	ref := ck.Ref()
	ref.URI = p.String()
	if err := s.Store.Record(ctx, owner, server.Checkpoint{Path: p, Ref: ref, Base: ck.BaseModel, Created: ck.Created}); err != nil {
		// The run is here already, recorded for another tenant.
		return fmt.Errorf("%w: %s: %v", ckptstore.ErrNotFound, p, err)
	}
	return nil
}

// archiveLink asks the peer where p's archive is (a 302 to a signed URL).
func (s *Store) archiveLink(ctx context.Context, p wire.TinkerPath) (string, error) {
	u := fmt.Sprintf("%s/api/v1/training_runs/%s/checkpoints/%s/%s/archive", s.opts.PeerURL, p.Run, p.Kind, p.Name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("X-API-Key", s.opts.APIKey)
	c := *s.opts.HTTPClient
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if err != nil {
		return "", fmt.Errorf("peerstore: ask %s for %s: %w", s.opts.PeerURL, p, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	switch {
	case resp.StatusCode == http.StatusFound || resp.StatusCode == http.StatusSeeOther || resp.StatusCode == http.StatusTemporaryRedirect:
		loc := resp.Header.Get("Location")
		if loc == "" {
			return "", fmt.Errorf("peerstore: %s answered %d without a Location for %s", s.opts.PeerURL, resp.StatusCode, p)
		}
		return loc, nil
	case resp.StatusCode == http.StatusNotFound:
		return "", fmt.Errorf("%w: %s (not here, and the peer %s does not have it either: %s)", ckptstore.ErrNotFound, p, s.opts.PeerURL, strings.TrimSpace(string(body)))
	default:
		return "", fmt.Errorf("peerstore: ask %s for %s: %d %s", s.opts.PeerURL, p, resp.StatusCode, strings.TrimSpace(string(body)))
	}
}
