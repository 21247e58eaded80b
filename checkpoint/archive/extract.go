package archive

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

var (
	// ErrUnsafe reports an entry that Extract refuses: a bad name, a link,
	// a special file or a duplicate.
	ErrUnsafe = errors.New("archive: unsafe entry")
	// ErrTooLarge reports an archive beyond its Limits.
	ErrTooLarge = errors.New("archive: too large")
	// ErrFormat reports bytes that are not a tar (or gzip-compressed tar)
	// archive.
	ErrFormat = errors.New("archive: malformed archive")
)

// Limits bound what [Extract] accepts. Zero fields take the defaults below.
type Limits struct {
	// MaxEntries bounds the number of entries (files and folders);
	// default 4096.
	MaxEntries int
	// MaxFileSize bounds one file's size in bytes; default 8 GiB.
	MaxFileSize int64
	// MaxTotalSize bounds the sum of file sizes in bytes; default 8 GiB.
	MaxTotalSize int64
}

// Default limits.
const (
	DefaultMaxEntries   = 4096
	DefaultMaxFileSize  = 8 << 30
	DefaultMaxTotalSize = 8 << 30
)

func (l Limits) withDefaults() Limits {
	if l.MaxEntries <= 0 {
		l.MaxEntries = DefaultMaxEntries
	}
	if l.MaxFileSize <= 0 {
		l.MaxFileSize = DefaultMaxFileSize
	}
	if l.MaxTotalSize <= 0 {
		l.MaxTotalSize = DefaultMaxTotalSize
	}
	return l
}

// Extract reads a tar archive from r, gzip-compressed or not (detected from
// its first bytes), into dir, which must exist and should be an empty folder
// the caller owns. It returns the names of the regular files it wrote, in
// archive order.
//
// Only regular files and folders are accepted; every name must pass
// [CheckName]; a name may appear once; counts and sizes must stay within
// lim. A refused entry ends extraction with an error wrapping [ErrUnsafe] or
// [ErrTooLarge]; bytes that do not decode wrap [ErrFormat]; an error from r
// itself is returned wrapped, so callers can tell a broken connection from a
// hostile archive with errors.Is/As on their reader's errors. On error dir may
// hold part of the archive: the caller removes it.
//
// Files are created with mode 0644 and folders 0755; nothing is synced.
func Extract(ctx context.Context, r io.Reader, dir string, lim Limits) ([]string, error) {
	lim = lim.withDefaults()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("archive: extract: %w", err)
	}
	defer root.Close()

	src := &readErrTracker{r: &ctxReader{ctx: ctx, r: r}}
	br := bufio.NewReader(src)
	var in io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return nil, src.wrap(fmt.Errorf("%w: gzip header: %v", ErrFormat, err))
		}
		defer gz.Close()
		in = gz
	}
	x := extractor{root: root, lim: lim, seen: make(map[string]bool)}
	tr := tar.NewReader(in)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return x.files, nil
		}
		if err != nil {
			return nil, src.wrap(fmt.Errorf("%w: %v", ErrFormat, err))
		}
		if err := x.entry(hdr, tr); err != nil {
			return nil, src.wrap(err)
		}
	}
}

type extractor struct {
	root    *os.Root
	lim     Limits
	seen    map[string]bool
	entries int
	total   int64
	files   []string
}

func (x *extractor) entry(hdr *tar.Header, body io.Reader) error {
	x.entries++
	if x.entries > x.lim.MaxEntries {
		return fmt.Errorf("%w: more than %d entries", ErrTooLarge, x.lim.MaxEntries)
	}
	name := hdr.Name
	isDir := hdr.Typeflag == tar.TypeDir
	if isDir {
		name = strings.TrimSuffix(name, "/")
	}
	if err := CheckName(name); err != nil {
		return fmt.Errorf("%w: %v", ErrUnsafe, err)
	}
	if x.seen[name] {
		return fmt.Errorf("%w: %q appears twice", ErrUnsafe, name)
	}
	x.seen[name] = true
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := x.root.MkdirAll(name, 0o755); err != nil {
			return fmt.Errorf("%w: folder %q: %v", ErrUnsafe, name, err)
		}
		return nil
	case tar.TypeReg, tar.TypeRegA: //nolint:staticcheck // old archives still write TypeRegA
		return x.file(name, hdr.Size, body)
	default:
		return fmt.Errorf("%w: %q has type %s; only regular files and folders are allowed",
			ErrUnsafe, name, typeName(hdr.Typeflag))
	}
}

func (x *extractor) file(name string, size int64, body io.Reader) error {
	if size < 0 || size > x.lim.MaxFileSize {
		return fmt.Errorf("%w: %q is %d bytes, at most %d allowed", ErrTooLarge, name, size, x.lim.MaxFileSize)
	}
	if x.total+size > x.lim.MaxTotalSize {
		return fmt.Errorf("%w: files total more than %d bytes", ErrTooLarge, x.lim.MaxTotalSize)
	}
	x.total += size
	if parent := path.Dir(name); parent != "." {
		if err := x.root.MkdirAll(parent, 0o755); err != nil {
			return fmt.Errorf("%w: folder for %q: %v", ErrUnsafe, name, err)
		}
	}
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %q already exists", ErrUnsafe, name)
		}
		return fmt.Errorf("%w: create %q: %v", ErrUnsafe, name, err)
	}
	n, err := io.Copy(f, body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %q ends after %d of %d bytes", ErrFormat, name, n, size)
	}
	if err != nil {
		return fmt.Errorf("archive: extract %q after %d bytes: %w", name, n, err)
	}
	if n != size {
		return fmt.Errorf("%w: %q holds %d bytes, header says %d", ErrFormat, name, n, size)
	}
	x.files = append(x.files, name)
	return nil
}

func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symlink"
	case tar.TypeLink:
		return "hard link"
	case tar.TypeChar:
		return "character device"
	case tar.TypeBlock:
		return "block device"
	case tar.TypeFifo:
		return "fifo"
	case tar.TypeGNUSparse:
		return "sparse file"
	default:
		return fmt.Sprintf("%q", t)
	}
}

// ReadError wraps an error returned by the reader given to [Extract], so a
// caller can tell a failed transfer (worth retrying) from a bad archive.
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return "archive: read: " + e.Err.Error() }
func (e *ReadError) Unwrap() error { return e.Err }

// readErrTracker remembers the first error the source returned (other than
// io.EOF), because tar and gzip readers replace it with their own.
type readErrTracker struct {
	r   io.Reader
	err error
}

func (t *readErrTracker) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && t.err == nil {
		t.err = err
	}
	return n, err
}

// wrap returns err, or a *ReadError if the source failed: a truncated or
// garbled archive after a read error is the transfer's fault.
func (t *readErrTracker) wrap(err error) error {
	if t.err != nil {
		return &ReadError{Err: t.err}
	}
	return err
}
