package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// entry describes one tar entry for hand-built archives.
type entry struct {
	name     string
	typeflag byte
	body     string
	size     int64 // header size; -1 means len(body)
	link     string
}

func buildTar(t testing.TB, entries []entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		size := e.size
		if size < 0 {
			size = int64(len(e.body))
		}
		hdr := &tar.Header{Name: e.name, Typeflag: e.typeflag, Size: size, Mode: 0o644, Linkname: e.link}
		if e.typeflag != tar.TypeReg {
			hdr.Size = 0
		}
		require.NoError(t, tw.WriteHeader(hdr))
		if e.typeflag == tar.TypeReg {
			_, err := tw.Write([]byte(e.body))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func gzipBytes(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	_, err := zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return buf.Bytes()
}

func writeTree(t *testing.T, dir string, files map[string]string) []string {
	t.Helper()
	var names []string
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		names = append(names, name)
	}
	return names
}

func TestWriteExtractRoundTrip(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"manifest.json":             `{"x":1}`,
		"adapter_config.json":       `{"r":8}`,
		"adapter_model.safetensors": string(bytes.Repeat([]byte{0, 1, 2, 250}, 5000)),
		"optimizer/state.bin":       "moments",
		"empty":                     "",
	}
	for _, gz := range []bool{false, true} {
		t.Run(map[bool]string{false: "tar", true: "gzip"}[gz], func(t *testing.T) {
			t.Parallel()
			src := t.TempDir()
			names := writeTree(t, src, files)
			var buf bytes.Buffer
			require.NoError(t, Write(context.Background(), &buf, src, names, WriteOptions{Gzip: gz}))
			if gz {
				assert.Equal(t, []byte{0x1f, 0x8b}, buf.Bytes()[:2])
			}
			dst := t.TempDir()
			got, err := Extract(context.Background(), &buf, dst, Limits{})
			require.NoError(t, err)
			assert.Equal(t, names, got, "names in archive order")
			for name, body := range files {
				b, err := os.ReadFile(filepath.Join(dst, filepath.FromSlash(name)))
				require.NoError(t, err)
				assert.Equal(t, body, string(b), name)
			}
		})
	}
}

func TestWriteIsDeterministic(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	names := writeTree(t, src, map[string]string{"a": "1", "b/c": "22"})
	var one, two bytes.Buffer
	require.NoError(t, Write(context.Background(), &one, src, names, WriteOptions{}))
	require.NoError(t, Write(context.Background(), &two, src, names, WriteOptions{}))
	assert.Equal(t, one.Bytes(), two.Bytes())
}

func TestWriteRejects(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	writeTree(t, src, map[string]string{"a": "1"})
	require.NoError(t, os.Symlink("a", filepath.Join(src, "link")))
	require.NoError(t, os.Mkdir(filepath.Join(src, "sub"), 0o755))
	for _, tc := range []struct{ name, want string }{
		{"../a", "'..' segment"},
		{"/etc/passwd", "absolute"},
		{"missing", "no such file"},
		{"link", "not a regular file"},
		{"sub", "not a regular file"},
	} {
		err := Write(context.Background(), io.Discard, src, []string{tc.name}, WriteOptions{})
		require.Error(t, err, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, Write(ctx, io.Discard, src, []string{"a"}, WriteOptions{}), context.Canceled)
}

func TestExtractRefuses(t *testing.T) {
	t.Parallel()
	big := string(bytes.Repeat([]byte("x"), 100))
	small := Limits{MaxEntries: 3, MaxFileSize: 64, MaxTotalSize: 100}
	tests := []struct {
		name    string
		entries []entry
		lim     Limits
		want    error
		msg     string
	}{
		{"absolute", []entry{{name: "/etc/passwd", typeflag: tar.TypeReg, body: "x", size: -1}}, Limits{}, ErrUnsafe, "absolute"},
		{"dotdot", []entry{{name: "../evil", typeflag: tar.TypeReg, body: "x", size: -1}}, Limits{}, ErrUnsafe, "'..'"},
		{"inner dotdot", []entry{{name: "a/../../evil", typeflag: tar.TypeReg, body: "x", size: -1}}, Limits{}, ErrUnsafe, "'..'"},
		{"dot segment", []entry{{name: "./a", typeflag: tar.TypeReg, body: "x", size: -1}}, Limits{}, ErrUnsafe, "clean form"},
		{"double slash", []entry{{name: "a//b", typeflag: tar.TypeReg, body: "x", size: -1}}, Limits{}, ErrUnsafe, "clean form"},
		{"backslash", []entry{{name: `..\evil`, typeflag: tar.TypeReg, body: "x", size: -1}}, Limits{}, ErrUnsafe, `'\\'`},
		{"empty name", []entry{{name: "", typeflag: tar.TypeReg, body: "x", size: -1}}, Limits{}, ErrUnsafe, "empty"},
		{"symlink", []entry{{name: "link", typeflag: tar.TypeSymlink, link: "/etc/passwd"}}, Limits{}, ErrUnsafe, "symlink"},
		{"symlink then write through", []entry{
			{name: "d", typeflag: tar.TypeSymlink, link: ".."},
			{name: "d/evil", typeflag: tar.TypeReg, body: "x", size: -1},
		}, Limits{}, ErrUnsafe, "symlink"},
		{"hard link", []entry{{name: "h", typeflag: tar.TypeLink, link: "/etc/passwd"}}, Limits{}, ErrUnsafe, "hard link"},
		{"char device", []entry{{name: "c", typeflag: tar.TypeChar}}, Limits{}, ErrUnsafe, "character device"},
		{"fifo", []entry{{name: "f", typeflag: tar.TypeFifo}}, Limits{}, ErrUnsafe, "fifo"},
		{"duplicate", []entry{
			{name: "a", typeflag: tar.TypeReg, body: "1", size: -1},
			{name: "a", typeflag: tar.TypeReg, body: "2", size: -1},
		}, Limits{}, ErrUnsafe, "twice"},
		{"file over dir", []entry{
			{name: "a", typeflag: tar.TypeReg, body: "1", size: -1},
			{name: "a/b", typeflag: tar.TypeReg, body: "2", size: -1},
		}, Limits{}, ErrUnsafe, "folder for"},
		{"oversize file", []entry{{name: "a", typeflag: tar.TypeReg, body: big, size: -1}}, small, ErrTooLarge, "at most 64"},
		{"oversize total", []entry{
			{name: "a", typeflag: tar.TypeReg, body: big[:60], size: -1},
			{name: "b", typeflag: tar.TypeReg, body: big[:60], size: -1},
		}, small, ErrTooLarge, "total more than 100"},
		{"too many entries", []entry{
			{name: "a", typeflag: tar.TypeDir}, {name: "b", typeflag: tar.TypeDir},
			{name: "c", typeflag: tar.TypeDir}, {name: "d", typeflag: tar.TypeDir},
		}, small, ErrTooLarge, "more than 3 entries"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			parent := t.TempDir()
			dst := filepath.Join(parent, "dst")
			require.NoError(t, os.Mkdir(dst, 0o755))
			for _, raw := range [][]byte{buildTar(t, tc.entries), gzipBytes(t, buildTar(t, tc.entries))} {
				_, err := Extract(context.Background(), bytes.NewReader(raw), dst, tc.lim)
				require.ErrorIs(t, err, tc.want)
				assert.Contains(t, err.Error(), tc.msg)
				assertConfined(t, parent, "dst")
				assertNoLinks(t, dst)
				require.NoError(t, os.RemoveAll(dst))
				require.NoError(t, os.Mkdir(dst, 0o755))
			}
		})
	}
}

func TestExtractMalformed(t *testing.T) {
	t.Parallel()
	good := buildTar(t, []entry{{name: "a", typeflag: tar.TypeReg, body: "hello world", size: -1}})
	tests := map[string][]byte{
		"garbage":     []byte("this is not a tar archive at all, but it is long enough to look at" + string(make([]byte, 512))),
		"truncated":   good[:520],
		"bad gzip":    {0x1f, 0x8b, 0, 0, 0},
		"gzip cut":    gzipBytes(t, good)[:20],
		"short sizes": buildTar(t, []entry{{name: "a", typeflag: tar.TypeReg, body: "", size: -1}})[:100],
	}
	for name, raw := range tests {
		_, err := Extract(context.Background(), bytes.NewReader(raw), t.TempDir(), Limits{})
		require.ErrorIs(t, err, ErrFormat, name)
	}
	files, err := Extract(context.Background(), bytes.NewReader(nil), t.TempDir(), Limits{})
	require.NoError(t, err, "an empty stream is an empty archive")
	assert.Empty(t, files)
}

// failingReader yields some bytes, then a transport error.
type failingReader struct {
	data []byte
	err  error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

func TestExtractReportsReadErrors(t *testing.T) {
	t.Parallel()
	good := buildTar(t, []entry{{name: "a", typeflag: tar.TypeReg, body: string(make([]byte, 4000)), size: -1}})
	boom := errors.New("connection reset")
	for _, raw := range [][]byte{good, gzipBytes(t, good)} {
		_, err := Extract(context.Background(), &failingReader{data: raw[:len(raw)/2], err: boom}, t.TempDir(), Limits{})
		var re *ReadError
		require.ErrorAs(t, err, &re)
		assert.ErrorIs(t, err, boom)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Extract(ctx, bytes.NewReader(good), t.TempDir(), Limits{})
	assert.ErrorIs(t, err, context.Canceled)
}

// assertConfined checks that parent holds nothing but the named child.
func assertConfined(t testing.TB, parent, child string) {
	t.Helper()
	ents, err := os.ReadDir(parent)
	require.NoError(t, err)
	for _, e := range ents {
		assert.Equal(t, child, e.Name(), "extraction escaped into %s", parent)
	}
}

// assertNoLinks checks that dir holds only regular files and folders.
func assertNoLinks(t testing.TB, dir string) {
	t.Helper()
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		require.NoError(t, err)
		if !d.IsDir() && !d.Type().IsRegular() {
			t.Errorf("%s has type %s", p, d.Type())
		}
		return nil
	}))
}
