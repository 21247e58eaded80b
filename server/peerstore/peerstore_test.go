package peerstore

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/ckptstore"
	"github.com/tandemrl/tandem/server/servertest"
	"github.com/tandemrl/tandem/wire"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const key = "peer-key-0123456789"

// peer is a tandem server whose store holds one sampler checkpoint
// (r1/sampler_weights/v3, version 3), with its archives mounted as
// `tandem serve` mounts them. links counts archive-link requests.
type peer struct {
	hs    *httptest.Server
	links atomic.Int64
}

func newPeer(t *testing.T) *peer {
	t.Helper()
	st, err := checkpoint.Open(t.TempDir())
	require.NoError(t, err)
	_, err = st.Save(context.Background(), checkpoint.Meta{Run: "r1", Name: "v3", Kind: policy.SamplerWeights, Version: 3, BaseModel: "b"}, func(dir string) error {
		return os.WriteFile(filepath.Join(dir, "adapter_model.safetensors"), []byte("weights of version 3"), 0o644)
	})
	require.NoError(t, err)
	signer := checkpoint.Signer{Key: []byte("0123456789abcdef0123456789abcdef")}
	archives, err := checkpoint.NewHandler(st, signer, checkpoint.HandlerOptions{})
	require.NoError(t, err)
	p := &peer{}
	mux := http.NewServeMux()
	p.hs = httptest.NewUnstartedServer(mux)
	p.hs.Start()
	local := ckptstore.New(st, ckptstore.Options{ArchiveBaseURL: p.hs.URL + "/checkpoints", Signer: signer})
	srv, err := server.New(server.Config{APIKeys: []string{key}}, server.Options{Backend: &servertest.Backend{}, Store: local})
	require.NoError(t, err)
	mux.Handle("/checkpoints/", http.StripPrefix("/checkpoints", archives))
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/archive") {
			p.links.Add(1)
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		p.hs.Close()
		require.NoError(t, srv.Close(context.Background()))
	})
	return p
}

func newStore(t *testing.T, peerURL string) (*Store, *checkpoint.Store) {
	t.Helper()
	st, err := checkpoint.Open(t.TempDir())
	require.NoError(t, err)
	// A client with no timeout: the default's 10 s bound is for a peer
	// that stops answering, which no test here has, and a loaded machine
	// must not turn a slow answer into a failure.
	s, err := New(ckptstore.New(st, ckptstore.Options{}), st, Options{PeerURL: peerURL, APIKey: key, HTTPClient: &http.Client{}})
	require.NoError(t, err)
	return s, st
}

func path(name string) wire.TinkerPath {
	return wire.TinkerPath{Run: "r1", Kind: wire.KindSamplerWeights, Name: name}
}

func TestFetchesOnceThenResolvesLocally(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPeer(t)
	s, st := newStore(t, p.hs.URL)
	const owner = "tenant-1"

	var wg sync.WaitGroup
	cks := make([]server.Checkpoint, 6)
	errs := make([]error, len(cks))
	for i := range cks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cks[i], errs[i] = s.Resolve(ctx, owner, path("v3"))
		}()
	}
	wg.Wait()
	for i := range cks {
		require.NoError(t, errs[i])
		assert.Equal(t, policy.Version(3), cks[i].Ref.Version)
		assert.Equal(t, "tinker://r1/sampler_weights/v3", cks[i].Path.String())
	}
	assert.Equal(t, int64(1), p.links.Load(), "concurrent misses share one download")

	ck, err := st.Get("r1", policy.SamplerWeights, "v3")
	require.NoError(t, err, "installed in the local folder")
	require.NoError(t, ck.Verify(ctx))
	b, err := os.ReadFile(ck.Path("adapter_model.safetensors"))
	require.NoError(t, err)
	assert.Equal(t, "weights of version 3", string(b))

	_, err = s.Resolve(ctx, owner, path("v3"))
	require.NoError(t, err)
	assert.Equal(t, int64(1), p.links.Load(), "resolved locally the second time")

	_, err = s.Resolve(ctx, "tenant-2", path("v3"))
	require.ErrorIs(t, err, ckptstore.ErrNotFound, "the downloaded run belongs to the tenant that fetched it")
}

func TestMissingEverywhere(t *testing.T) {
	t.Parallel()
	p := newPeer(t)
	s, _ := newStore(t, p.hs.URL)
	_, err := s.Resolve(context.Background(), "tenant-1", path("v9"))
	require.ErrorIs(t, err, ckptstore.ErrNotFound)
	assert.Contains(t, err.Error(), "does not have it either")
}

func TestPeerUnreachable(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.NotFoundHandler())
	url := hs.URL
	hs.Close()
	s, _ := newStore(t, url)
	_, err := s.Resolve(context.Background(), "tenant-1", path("v3"))
	require.Error(t, err)
	assert.NotErrorIs(t, err, ckptstore.ErrNotFound)
	assert.Contains(t, err.Error(), url)
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	st, err := checkpoint.Open(t.TempDir())
	require.NoError(t, err)
	local := ckptstore.New(st, ckptstore.Options{})
	for name, o := range map[string]Options{
		"no scheme": {PeerURL: "trainer:8000", APIKey: key},
		"no key":    {PeerURL: "http://trainer:8000"},
	} {
		_, err := New(local, st, o)
		assert.ErrorIs(t, err, ErrConfig, name)
	}
	_, err = New(nil, st, Options{PeerURL: "http://x", APIKey: key})
	assert.ErrorIs(t, err, ErrConfig)
}
