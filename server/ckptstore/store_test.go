package ckptstore_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/checkpoint"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/ckptstore"
	"github.com/tandemrl/tandem/wire"
)

func save(t *testing.T, st *checkpoint.Store, run, name string, kind policy.Kind, v policy.Version) {
	t.Helper()
	_, err := st.Save(context.Background(), checkpoint.Meta{Run: run, Name: name, Kind: kind, Version: v, BaseModel: "tiny-base"},
		func(dir string) error {
			return os.WriteFile(filepath.Join(dir, "adapter_model.safetensors"), []byte("w"), 0o644)
		})
	require.NoError(t, err)
}

func TestStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := checkpoint.Open(t.TempDir())
	require.NoError(t, err)
	s := ckptstore.New(st, ckptstore.Options{ArchiveBaseURL: "http://127.0.0.1:9/checkpoints", Signer: checkpoint.Signer{Key: []byte(strings.Repeat("k", 32))}})

	save(t, st, "model-a", "s1", policy.SamplerWeights, 3)
	save(t, st, "model-a", "state", policy.State, 3)
	p := wire.TinkerPath{Run: "model-a", Kind: wire.KindSamplerWeights, Name: "s1"}
	require.NoError(t, s.Record(ctx, "key-a", server.Checkpoint{Path: p}))
	require.NoError(t, s.Record(ctx, "key-a", server.Checkpoint{Path: p}), "recording again is fine")
	assert.Error(t, s.Record(ctx, "key-b", server.Checkpoint{Path: p}), "the run has an owner")

	ck, err := s.Resolve(ctx, "key-a", p)
	require.NoError(t, err)
	assert.Equal(t, policy.Version(3), ck.Ref.Version)
	assert.Equal(t, "tinker://model-a/sampler_weights/s1", ck.Ref.URI)
	assert.Equal(t, "tiny-base", ck.Base)
	_, err = s.Resolve(ctx, "key-b", p)
	assert.ErrorIs(t, err, ckptstore.ErrNotFound)
	_, err = s.Resolve(ctx, "key-a", wire.TinkerPath{Run: "model-a", Kind: wire.KindSamplerWeights, Name: "nope"})
	assert.ErrorIs(t, err, ckptstore.ErrNotFound)

	list, err := s.List(ctx, "key-a", "model-a")
	require.NoError(t, err)
	assert.Len(t, list, 2)
	list, err = s.List(ctx, "key-b", "model-a")
	require.NoError(t, err)
	assert.Empty(t, list)

	url, exp, err := s.ArchiveURL(ctx, "key-a", p)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(url, "http://127.0.0.1:9/checkpoints/"), url)
	assert.False(t, exp.IsZero())

	// A run no server recorded is visible to every key.
	save(t, st, "offline", "s1", policy.SamplerWeights, 7)
	ck, err = s.Resolve(ctx, "key-b", wire.TinkerPath{Run: "offline", Kind: wire.KindSamplerWeights, Name: "s1"})
	require.NoError(t, err)
	assert.Equal(t, policy.Version(7), ck.Ref.Version)

	assert.ErrorIs(t, s.Delete(ctx, "key-b", p), ckptstore.ErrNotFound)
	require.NoError(t, s.Delete(ctx, "key-a", p))
	_, err = s.Resolve(ctx, "key-a", p)
	assert.ErrorIs(t, err, ckptstore.ErrNotFound)
}
