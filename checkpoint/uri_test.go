package checkpoint

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
)

func TestParseURI(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want URI
		out  string // String(); "" means same as in
	}{
		{"tinker://arith/sampler_weights/000017", URI{Scheme: SchemeTinker, Run: "arith", Kind: policy.SamplerWeights, Name: "000017"}, ""},
		{"tinker://arith/weights/final", URI{Scheme: SchemeTinker, Run: "arith", Kind: policy.State, Name: "final"}, ""},
		{"tinker://98d93e3c-0eef-5fd2-bb6d-fa38952b4bc0:train:0/sampler_weights/final",
			URI{Scheme: SchemeTinker, Run: "98d93e3c-0eef-5fd2-bb6d-fa38952b4bc0:train:0", Kind: policy.SamplerWeights, Name: "final"}, ""},
		{"bt://loops:my-run/weights/step-10", URI{Scheme: SchemeBaseten, Run: "my-run", Kind: policy.State, Name: "step-10"}, ""},
		{"bt://loops:my-run/sampler_weights/s1", URI{Scheme: SchemeBaseten, Run: "my-run", Kind: policy.SamplerWeights, Name: "s1"}, ""},
		{"/var/ckpt/r/weights/x", URI{Scheme: SchemeLocal, Path: "/var/ckpt/r/weights/x"}, ""},
		{"./rel/dir", URI{Scheme: SchemeLocal, Path: "./rel/dir"}, ""},
		{"adapter", URI{Scheme: SchemeLocal, Path: "adapter"}, ""},
		{"file:///var/ckpt/x", URI{Scheme: SchemeLocal, Path: "/var/ckpt/x"}, "/var/ckpt/x"},
		{"file://localhost/a%20b", URI{Scheme: SchemeLocal, Path: "/a b"}, "/a b"},
		{"/odd/but://local", URI{Scheme: SchemeLocal, Path: "/odd/but://local"}, ""},
	}
	for _, tc := range tests {
		got, err := ParseURI(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
		out := tc.out
		if out == "" {
			out = tc.in
		}
		assert.Equal(t, out, got.String(), tc.in)
	}
}

func TestParseURIRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, msg string }{
		{"", "empty path"},
		{"tinker://", "want tinker://<run>/(weights|sampler_weights)/<name>"},
		{"tinker://run/weights", "want tinker://"},
		{"tinker://run/weights/a/b", "want tinker://"},
		{"tinker://run/optimizer/x", `kind "optimizer"`},
		{"tinker://../weights/x", "run ID"},
		{"tinker://run/weights/..", "checkpoint name"},
		{"tinker://run/weights/.hidden", "checkpoint name"},
		{"tinker://run/weights/a%2Fb", "checkpoint name"},
		{"tinker://run/sampler_weights/", "checkpoint name"},
		{"tinker:///sampler_weights/x", "run ID"},
		{"bt://run/weights/x", "want bt://loops:"},
		{"bt://loops:/weights/x", "run ID"},
		{"s3://bucket/key", "unknown scheme"},
		{"http://host/x", "unknown scheme"},
		{"file://host/x", "want file:///absolute/path"},
		{"file://relative", "want file:///absolute/path"},
		{"file:///x?y=1", "want file:///absolute/path"},
		{"/a\x00b", "NUL"},
		{"tinker://" + strings.Repeat("a", 5000), "at most 4096"},
	}
	for _, tc := range tests {
		_, err := ParseURI(tc.in)
		require.ErrorIs(t, err, ErrBadURI, tc.in)
		assert.Contains(t, err.Error(), tc.msg, tc.in)
	}
}

func TestURIRefMapping(t *testing.T) {
	t.Parallel()
	u, err := ParseURI("bt://loops:r/sampler_weights/000004")
	require.NoError(t, err)
	assert.Equal(t, "tinker://r/sampler_weights/000004", u.As(SchemeTinker).String())
	assert.Equal(t, u, u.As(SchemeTinker).As(SchemeBaseten))
	local := URI{Scheme: SchemeLocal, Path: "/x"}
	assert.Equal(t, local, local.As(SchemeTinker))

	ref := u.Ref()
	assert.Equal(t, policy.Ref{Run: "r", Name: "000004", Kind: policy.SamplerWeights, URI: "bt://loops:r/sampler_weights/000004"}, ref)
	back, err := URIFromRef(ref)
	require.NoError(t, err)
	assert.Equal(t, u, back)

	built, err := URIFromRef(policy.Ref{Run: "r", Kind: policy.State, Name: "final", Version: 9})
	require.NoError(t, err)
	assert.Equal(t, "tinker://r/weights/final", built.String())
	_, err = URIFromRef(policy.Ref{Run: "r", Kind: "bogus", Name: "final"})
	assert.ErrorIs(t, err, ErrBadURI)
}

// FuzzParseURI: no panic; whatever parses formats back to a string that
// parses to the same URI; remote URIs carry only valid parts.
func FuzzParseURI(f *testing.F) {
	for _, s := range []string{
		"tinker://run/weights/x", "tinker://a:train:0/sampler_weights/000001",
		"bt://loops:r/weights/n", "file:///a/b", "/a/b", "x", "s3://b/k", "tinker://../weights/x",
		"file://localhost/%2e%2e/x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseURI(s)
		if err != nil {
			require.ErrorIs(t, err, ErrBadURI)
			return
		}
		again, err := ParseURI(u.String())
		require.NoError(t, err, "String() of %#v", u)
		require.Equal(t, u, again)
		if u.Scheme != SchemeLocal {
			require.NoError(t, ValidKind(u.Kind))
			require.NoError(t, ValidName(u.Name))
			require.NotContains(t, u.Run, "/")
			require.False(t, strings.HasPrefix(u.Run, "."))
		}
	})
}
