package checkpoint

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
)

// FuzzParseArchivePath: the handler's path decoder never panics, accepts
// only valid names, and accepts exactly what ArchivePath writes.
func FuzzParseArchivePath(f *testing.F) {
	for _, s := range []string{
		"/r/weights/x.tar", "/r/sampler_weights/000001.tar.gz", "/../weights/x.tar",
		"/r/weights/..tar", "r/weights/x.tar", "/r/weights/x/y.tar", "/r/weights/.tar.gz",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		run, kind, name, gz, err := parseArchivePath(p)
		if err != nil {
			require.ErrorIs(t, err, ErrBadName)
			return
		}
		require.NoError(t, validID(run, kind, name))
		require.Equal(t, p, ArchivePath(run, kind, name, gz))
	})
}

func TestSourceFromURL(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ck := mustSave(t, s, meta("r", policy.SamplerWeights, "000003", 3), 1)
	want, err := s.Source(ck, SourceOptions{Kind: SourceURL, BaseURL: "https://trainer.example:8443/api/ckpt", Signer: Signer{Key: testKey}, Gzip: true})
	require.NoError(t, err)
	got, err := SourceFromURL(want.URL)
	require.NoError(t, err)
	want.Version, want.Size = 0, 0
	assert.Equal(t, want, got)

	for _, bad := range []string{
		"ftp://h/r/weights/x.tar", "/r/weights/x.tar", "http://h/x.tar", "http://h/r/weights/x.zip",
		"http://h/r/weights/x.tar?expires=soon", "http://h/../weights/x.tar",
	} {
		_, err := SourceFromURL(bad)
		assert.ErrorIs(t, err, ErrBadURI, bad)
	}
}
