package checkpoint

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tandemrl/tandem/policy"
)

func validManifest() Manifest {
	return Manifest{
		Format: ManifestFormat,
		Meta: Meta{Run: "r", Name: "n", Kind: policy.State, Version: 2, Step: 2, BaseModel: "m",
			Created: t0, Metrics: map[string]float64{"loss": 0.5}},
		Files: []File{
			{Name: "a", Size: 1, SHA256: strings.Repeat("ab", 32)},
			{Name: "b/c", Size: 0, SHA256: strings.Repeat("0", 64)},
		},
	}
}

func TestManifestEncodeParseRoundTrip(t *testing.T) {
	t.Parallel()
	m := validManifest()
	data, err := m.Encode()
	require.NoError(t, err)
	got, err := ParseManifest(data)
	require.NoError(t, err)
	assert.Equal(t, m, got)
	f, ok := got.File("b/c")
	require.True(t, ok)
	assert.Equal(t, m.Files[1], f)
	_, ok = got.File("zz")
	assert.False(t, ok)
	assert.Equal(t, int64(1), got.Size())
}

func TestParseManifestRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(m *Manifest)
		msg    string
	}{
		{"format", func(m *Manifest) { m.Format = 2 }, "format 2"},
		{"run", func(m *Manifest) { m.Run = "../x" }, "run name"},
		{"kind", func(m *Manifest) { m.Kind = "x" }, `kind "x"`},
		{"created", func(m *Manifest) { m.Created = time.Time{} }, "created time is missing"},
		{"traversal", func(m *Manifest) { m.Files[0].Name = "../../etc/passwd" }, "'..'"},
		{"absolute", func(m *Manifest) { m.Files[0].Name = "/etc/passwd" }, "absolute"},
		{"hidden", func(m *Manifest) { m.Files[0].Name = ".git" }, "starting with '.'"},
		{"manifest", func(m *Manifest) { m.Files[0].Name = ManifestName }, "reserved"},
		{"unsorted", func(m *Manifest) { m.Files[0], m.Files[1] = m.Files[1], m.Files[0] }, "not sorted"},
		{"duplicate", func(m *Manifest) { m.Files[1].Name = "a" }, "not sorted and unique"},
		{"size", func(m *Manifest) { m.Files[0].Size = -1 }, "size -1"},
		{"hash", func(m *Manifest) { m.Files[0].SHA256 = strings.Repeat("AB", 32) }, "lowercase hex"},
		{"short hash", func(m *Manifest) { m.Files[0].SHA256 = "abc" }, "64 lowercase hex"},
	}
	for _, tc := range tests {
		m := validManifest()
		tc.mutate(&m)
		data, err := m.Encode()
		require.NoError(t, err)
		_, err = ParseManifest(data)
		require.ErrorIs(t, err, ErrCorrupt, tc.name)
		assert.Contains(t, err.Error(), tc.msg, tc.name)
	}
	for name, raw := range map[string]string{
		"empty":    "",
		"not json": "{",
		"array":    "[]",
		"trailing": `{"format":1} {}`,
		"huge":     strings.Repeat(" ", MaxManifestSize+1),
	} {
		_, err := ParseManifest([]byte(raw))
		assert.ErrorIs(t, err, ErrCorrupt, name)
	}
}

// FuzzParseManifest: whatever decodes must validate and survive a round
// trip through Encode unchanged.
func FuzzParseManifest(f *testing.F) {
	m := validManifest()
	data, err := m.Encode()
	require.NoError(f, err)
	f.Add(data)
	f.Add([]byte(`{"format":1,"run":"r","name":"n","kind":"weights","version":0,"step":0,"created":"2026-01-01T00:00:00Z","files":[]}`))
	f.Add([]byte(`{"format":1,"files":[{"name":"../x","size":1,"sha256":""}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := ParseManifest(raw)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			return
		}
		require.NoError(t, m.Validate())
		for _, file := range m.Files {
			require.NoError(t, validFileName(file.Name))
		}
		again, err := m.Encode()
		require.NoError(t, err)
		m2, err := ParseManifest(again)
		require.NoError(t, err)
		require.True(t, m.Created.Equal(m2.Created))
		m2.Created = m.Created
		require.Equal(t, m, m2)
	})
}
