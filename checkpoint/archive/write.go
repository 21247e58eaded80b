package archive

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

// WriteOptions tunes [Write]. The zero value writes an uncompressed tar.
type WriteOptions struct {
	// Gzip compresses the archive.
	Gzip bool
	// ModTime is the modification time recorded for every entry; the zero
	// value records the Unix epoch, so the same files give the same bytes.
	ModTime time.Time
}

// Write streams the files of dir named by names (slash-separated, relative,
// each passing [CheckName]) to w as a tar archive, in the order given, as
// regular entries with mode 0644. A file must not change size while it is
// written: Write copies exactly the size it found and fails otherwise.
//
// Write reads each file once and holds one copy buffer; it checks ctx
// between files and while copying. On error the archive written so far is
// incomplete and w should be discarded.
func Write(ctx context.Context, w io.Writer, dir string, names []string, opts WriteOptions) (err error) {
	for _, name := range names {
		if err := CheckName(name); err != nil {
			return fmt.Errorf("archive: write: %w", err)
		}
	}
	mod := opts.ModTime
	if mod.IsZero() {
		mod = time.Unix(0, 0)
	}
	var gz *gzip.Writer
	if opts.Gzip {
		gz = gzip.NewWriter(w)
		w = gz
	}
	tw := tar.NewWriter(w)
	for _, name := range names {
		if err := writeFile(ctx, tw, filepath.Join(dir, filepath.FromSlash(name)), name, mod); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("archive: finish tar: %w", err)
	}
	if gz != nil {
		if err := gz.Close(); err != nil {
			return fmt.Errorf("archive: finish gzip: %w", err)
		}
	}
	return nil
}

func writeFile(ctx context.Context, tw *tar.Writer, src, name string, mod time.Time) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("archive: write %s: %w", name, context.Cause(ctx))
	}
	if st, err := os.Lstat(src); err != nil {
		return fmt.Errorf("archive: write %s: %w", name, err)
	} else if !st.Mode().IsRegular() {
		return fmt.Errorf("archive: write %s: not a regular file (%s)", name, st.Mode().Type())
	}
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("archive: write %s: %w", name, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("archive: write %s: %w", name, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("archive: write %s: not a regular file (%s)", name, st.Mode().Type())
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg,
		Name:     name,
		Size:     st.Size(),
		Mode:     0o644,
		ModTime:  mod,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("archive: write %s header: %w", name, err)
	}
	n, err := io.CopyN(tw, &ctxReader{ctx: ctx, r: f}, st.Size())
	if err != nil {
		return fmt.Errorf("archive: write %s: copied %d of %d bytes: %w", name, n, st.Size(), err)
	}
	return nil
}

// ctxReader fails reads once ctx is done, so a long copy stops promptly.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, context.Cause(c.ctx)
	}
	return c.r.Read(p)
}
