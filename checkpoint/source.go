package checkpoint

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tandemrl/tandem/policy"
)

// SourceKind says how a checkpoint can be read.
type SourceKind string

const (
	// SourceVolume is a folder path readable by the caller (a shared or
	// local volume).
	SourceVolume SourceKind = "volume"
	// SourceURL is an HTTP URL of the checkpoint's archive, signed and
	// expiring.
	SourceURL SourceKind = "url"
)

// Source says where a checkpoint can be read from: the answer to
// "checkpoint source". It is JSON-serializable.
type Source struct {
	// Kind is SourceVolume or SourceURL.
	Kind SourceKind `json:"kind"`
	// URI is the checkpoint's tinker:// URI.
	URI string `json:"uri"`
	// Version is the checkpoint's policy version.
	Version policy.Version `json:"version"`
	// Size is the total size of the checkpoint's files in bytes.
	Size int64 `json:"size"`
	// Path is the checkpoint folder, for SourceVolume.
	Path string `json:"path,omitempty"`
	// URL is the signed archive URL, for SourceURL.
	URL string `json:"url,omitempty"`
	// Expires is when URL stops working, for SourceURL.
	Expires time.Time `json:"expires,omitzero"`
}

// SourceOptions says which kind of Source to make. The zero value asks
// for a volume path.
type SourceOptions struct {
	// Kind is SourceVolume (the default when empty) or SourceURL.
	Kind SourceKind
	// BaseURL is where the archive Handler is mounted, e.g.
	// "http://10.0.0.5:8080/checkpoints"; required for SourceURL.
	BaseURL string
	// Signer signs URLs; required for SourceURL.
	Signer Signer
	// TTL is how long a URL stays valid; default DefaultTTL, at most MaxTTL.
	TTL time.Duration
	// Gzip serves the archive gzip-compressed.
	Gzip bool
}

// URL lifetimes.
const (
	DefaultTTL = 15 * time.Minute
	MaxTTL     = 7 * 24 * time.Hour
)

// Source answers where ck can be read from, as opts asks: its folder, or a
// signed archive URL served by this store's Handler. ck should come from
// this store.
func (s *Store) Source(ck Checkpoint, opts SourceOptions) (Source, error) {
	src := Source{URI: ck.URI().String(), Version: ck.Version, Size: ck.Size()}
	switch opts.Kind {
	case "", SourceVolume:
		src.Kind, src.Path = SourceVolume, ck.Dir
		return src, nil
	case SourceURL:
	default:
		return Source{}, fmt.Errorf("checkpoint: source kind %q: want %q or %q", opts.Kind, SourceVolume, SourceURL)
	}
	ttl := opts.TTL
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if ttl < 0 || ttl > MaxTTL {
		return Source{}, fmt.Errorf("checkpoint: source TTL %v: want between 0 and %v", ttl, MaxTTL)
	}
	base, err := url.Parse(opts.BaseURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return Source{}, fmt.Errorf("checkpoint: source base URL %q: want http(s)://host[:port][/prefix]", opts.BaseURL)
	}
	rel := ArchivePath(ck.Run, ck.Kind, ck.Name, opts.Gzip)
	expires := s.now().Add(ttl).Truncate(time.Second)
	sig, err := opts.Signer.Sign(rel, expires)
	if err != nil {
		return Source{}, fmt.Errorf("checkpoint: source: %w", err)
	}
	u := *base
	u.Path = strings.TrimSuffix(base.Path, "/") + rel
	u.RawPath = ""
	u.RawQuery = url.Values{"expires": {strconv.FormatInt(expires.Unix(), 10)}, "sig": {sig}}.Encode()
	u.Fragment = ""
	src.Kind, src.URL, src.Expires = SourceURL, u.String(), expires.UTC()
	return src, nil
}

// Archive file suffixes.
const (
	tarSuffix   = ".tar"
	tgzSuffix   = ".tar.gz"
	contentTar  = "application/x-tar"
	contentGzip = "application/gzip"
)

// ArchivePath returns the path, below the Handler's mount point, of a
// checkpoint's archive: /<run>/<kind>/<name>.tar or .tar.gz. This path is
// what URLs sign.
func ArchivePath(run string, kind policy.Kind, name string, gzip bool) string {
	suffix := tarSuffix
	if gzip {
		suffix = tgzSuffix
	}
	return "/" + run + "/" + string(kind) + "/" + name + suffix
}

// parseArchivePath is ArchivePath's inverse; it validates every part.
func parseArchivePath(p string) (run string, kind policy.Kind, name string, gzip bool, err error) {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if !strings.HasPrefix(p, "/") || len(parts) != 3 {
		return "", "", "", false, fmt.Errorf("%w: path %q: want /<run>/<kind>/<name>.tar or .tar.gz", ErrBadName, p)
	}
	run, kind, name = parts[0], policy.Kind(parts[1]), parts[2]
	switch {
	case strings.HasSuffix(name, tgzSuffix):
		name, gzip = strings.TrimSuffix(name, tgzSuffix), true
	case strings.HasSuffix(name, tarSuffix):
		name = strings.TrimSuffix(name, tarSuffix)
	default:
		return "", "", "", false, fmt.Errorf("%w: path %q: want a .tar or .tar.gz suffix", ErrBadName, p)
	}
	if err := validID(run, kind, name); err != nil {
		return "", "", "", false, err
	}
	return run, kind, name, gzip, nil
}

// SourceFromURL rebuilds a SourceURL from a signed archive URL alone (what a
// person pastes into `tandem checkpoints download`): the checkpoint's
// identity from the last three path segments and the expiry from the query.
// Version and Size are unknown (zero) until the download's manifest tells.
func SourceFromURL(raw string) (Source, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Source{}, fmt.Errorf("%w %q: want an http(s) checkpoint archive URL", ErrBadURI, redact(raw))
	}
	segs := strings.Split(u.Path, "/")
	if len(segs) < 4 {
		return Source{}, fmt.Errorf("%w %q: path should end in /<run>/<kind>/<name>.tar[.gz]", ErrBadURI, redact(raw))
	}
	run, kind, name, _, err := parseArchivePath("/" + strings.Join(segs[len(segs)-3:], "/"))
	if err != nil {
		return Source{}, fmt.Errorf("%w %q: %v", ErrBadURI, redact(raw), err)
	}
	src := Source{Kind: SourceURL, URL: raw, URI: URI{Scheme: SchemeTinker, Run: run, Kind: kind, Name: name}.String()}
	if e := u.Query().Get("expires"); e != "" {
		sec, err := strconv.ParseInt(e, 10, 64)
		if err != nil {
			return Source{}, fmt.Errorf("%w %q: expires %q is not Unix seconds", ErrBadURI, redact(raw), e)
		}
		src.Expires = time.Unix(sec, 0).UTC()
	}
	return src, nil
}
