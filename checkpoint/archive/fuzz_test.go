package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzExtract feeds arbitrary bytes to Extract: it must never panic, never
// write outside its folder, never create anything but regular files and
// folders, and never write more than its limits allow.
func FuzzExtract(f *testing.F) {
	seeds := [][]entry{
		{{name: "a", typeflag: tar.TypeReg, body: "hello", size: -1}},
		{{name: "d", typeflag: tar.TypeDir}, {name: "d/x", typeflag: tar.TypeReg, body: "1", size: -1}},
		{{name: "../x", typeflag: tar.TypeReg, body: "1", size: -1}},
		{{name: "/abs", typeflag: tar.TypeReg, body: "1", size: -1}},
		{{name: "l", typeflag: tar.TypeSymlink, link: "/"}, {name: "l/x", typeflag: tar.TypeReg, body: "1", size: -1}},
		{{name: "h", typeflag: tar.TypeLink, link: "a"}},
		{{name: "big", typeflag: tar.TypeReg, body: string(make([]byte, 300)), size: -1}},
	}
	for _, s := range seeds {
		raw := buildTar(f, s)
		f.Add(raw)
		f.Add(gzipBytes(f, raw))
	}
	f.Add([]byte{0x1f, 0x8b})
	lim := Limits{MaxEntries: 8, MaxFileSize: 256, MaxTotalSize: 512}
	// One parent folder per fuzz process, emptied after every input: a
	// fresh t.TempDir per input would cost more than Extract itself.
	parent := f.TempDir()
	dst := filepath.Join(parent, "dst")
	f.Fuzz(func(t *testing.T, raw []byte) {
		require.NoError(t, os.Mkdir(dst, 0o755))
		defer func() { require.NoError(t, os.RemoveAll(dst)) }()
		files, err := Extract(context.Background(), bytes.NewReader(raw), dst, lim)
		assertConfined(t, parent, "dst")
		var total int64
		entries := 0
		require.NoError(t, filepath.WalkDir(dst, func(p string, d os.DirEntry, werr error) error {
			require.NoError(t, werr)
			if p == dst {
				return nil
			}
			entries++
			switch {
			case d.IsDir():
			case d.Type().IsRegular():
				info, ierr := d.Info()
				require.NoError(t, ierr)
				require.LessOrEqual(t, info.Size(), lim.MaxFileSize)
				total += info.Size()
			default:
				t.Fatalf("%s has type %s", p, d.Type())
			}
			return nil
		}))
		require.LessOrEqual(t, total, lim.MaxTotalSize)
		if err == nil {
			for _, name := range files {
				require.NoError(t, CheckName(name))
			}
		}
	})
}
