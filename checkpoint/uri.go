package checkpoint

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/tandemrl/tandem/policy"
)

// Scheme says how a URI addresses a checkpoint.
type Scheme string

const (
	// SchemeTinker is tinker://<run>/(weights|sampler_weights)/<name>.
	SchemeTinker Scheme = "tinker"
	// SchemeBaseten is Baseten Loops' bt://loops:<run>/(weights|sampler_weights)/<name>.
	SchemeBaseten Scheme = "bt"
	// SchemeLocal is a local folder path (or a file:///path URI).
	SchemeLocal Scheme = "file"
)

const (
	tinkerPrefix  = "tinker://"
	basetenPrefix = "bt://loops:"
	filePrefix    = "file://"
	maxURILen     = 4096
)

// URI addresses a checkpoint. For SchemeTinker and SchemeBaseten, Run, Kind
// and Name are set and Path is empty; for SchemeLocal only Path is set.
type URI struct {
	Scheme Scheme
	Run    string
	Kind   policy.Kind
	Name   string
	Path   string
}

// ParseURI parses a checkpoint address:
//
//	tinker://<run>/weights/<name>
//	tinker://<run>/sampler_weights/<name>
//	bt://loops:<run>/(weights|sampler_weights)/<name>
//	file:///abs/path, /abs/path, ./rel/path or any other plain path
//
// Remote run IDs may contain ':' besides the characters of
// policy.ValidRunName, because Tinker's look like "<uuid>:train:0"; such a
// run cannot be stored locally. Checkpoint names follow ValidName. Any other
// "scheme://" prefix is an error. Errors wrap ErrBadURI and say what was
// expected.
func ParseURI(s string) (URI, error) {
	if len(s) > maxURILen {
		return URI{}, fmt.Errorf("%w: %d bytes, at most %d allowed", ErrBadURI, len(s), maxURILen)
	}
	switch {
	case strings.HasPrefix(s, tinkerPrefix):
		return parseRemote(SchemeTinker, s, s[len(tinkerPrefix):])
	case strings.HasPrefix(s, "bt://"):
		if !strings.HasPrefix(s, basetenPrefix) {
			return URI{}, fmt.Errorf("%w %q: want bt://loops:<run>/(weights|sampler_weights)/<name>", ErrBadURI, s)
		}
		return parseRemote(SchemeBaseten, s, s[len(basetenPrefix):])
	case strings.HasPrefix(s, filePrefix):
		u, err := url.Parse(s)
		if err != nil || (u.Host != "" && u.Host != "localhost") || !strings.HasPrefix(u.Path, "/") ||
			u.RawQuery != "" || u.Fragment != "" {
			return URI{}, fmt.Errorf("%w %q: want file:///absolute/path", ErrBadURI, s)
		}
		return parseLocal(s, u.Path)
	case hasScheme(s):
		return URI{}, fmt.Errorf("%w %q: unknown scheme; want tinker://, bt://loops:, file:// or a local path", ErrBadURI, s)
	}
	return parseLocal(s, s)
}

// hasScheme reports whether s starts with "<scheme>://", a scheme being a
// letter followed by letters, digits, '+', '-' or '.'.
func hasScheme(s string) bool {
	i := strings.Index(s, "://")
	if i <= 0 {
		return false
	}
	for j, r := range s[:i] {
		letter := (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		if !letter && (j == 0 || !((r >= '0' && r <= '9') || r == '+' || r == '-' || r == '.')) {
			return false
		}
	}
	return true
}

func parseLocal(orig, p string) (URI, error) {
	if p == "" {
		return URI{}, fmt.Errorf("%w: empty path", ErrBadURI)
	}
	if strings.ContainsRune(p, 0) {
		return URI{}, fmt.Errorf("%w %q: path has a NUL byte", ErrBadURI, orig)
	}
	return URI{Scheme: SchemeLocal, Path: p}, nil
}

func parseRemote(scheme Scheme, orig, rest string) (URI, error) {
	form := "tinker://<run>/(weights|sampler_weights)/<name>"
	if scheme == SchemeBaseten {
		form = "bt://loops:<run>/(weights|sampler_weights)/<name>"
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return URI{}, fmt.Errorf("%w %q: want %s", ErrBadURI, orig, form)
	}
	u := URI{Scheme: scheme, Run: parts[0], Kind: policy.Kind(parts[1]), Name: parts[2]}
	if err := validRemoteRun(u.Run); err != nil {
		return URI{}, fmt.Errorf("%w %q: %v", ErrBadURI, orig, err)
	}
	if err := ValidKind(u.Kind); err != nil {
		return URI{}, fmt.Errorf("%w %q: %v", ErrBadURI, orig, err)
	}
	if err := ValidName(u.Name); err != nil {
		return URI{}, fmt.Errorf("%w %q: %v", ErrBadURI, orig, err)
	}
	return u, nil
}

// validRemoteRun accepts policy.ValidRunName's names and also ':' inside.
func validRemoteRun(run string) error {
	if err := policy.ValidRunName(strings.ReplaceAll(run, ":", "_")); err != nil {
		return fmt.Errorf("run ID %q: want 1–128 letters, digits, '-', '_', '.' or ':', not starting with '.'", run)
	}
	return nil
}

// String formats the URI; ParseURI(u.String()) gives u back for any u that
// ParseURI returned. A local URI formats as its plain path.
func (u URI) String() string {
	switch u.Scheme {
	case SchemeTinker:
		return tinkerPrefix + u.Run + "/" + string(u.Kind) + "/" + u.Name
	case SchemeBaseten:
		return basetenPrefix + u.Run + "/" + string(u.Kind) + "/" + u.Name
	default:
		return u.Path
	}
}

// As returns the same checkpoint addressed with another remote scheme
// (tinker ↔ bt). A local URI is returned unchanged.
func (u URI) As(scheme Scheme) URI {
	if u.Scheme == SchemeLocal || scheme == SchemeLocal {
		return u
	}
	u.Scheme = scheme
	return u
}

// Ref returns a policy reference carrying the URI and, for remote URIs,
// its run, kind and name. The version is not in a URI: it is zero until
// the checkpoint is resolved (Store.Resolve, then Checkpoint.Ref).
func (u URI) Ref() policy.Ref {
	return policy.Ref{Run: u.Run, Name: u.Name, Kind: u.Kind, URI: u.String()}
}

// URIFromRef returns the URI a policy reference points at: its URI field
// parsed if set, else a tinker:// URI built from its run, kind and name.
func URIFromRef(ref policy.Ref) (URI, error) {
	if ref.URI != "" {
		return ParseURI(ref.URI)
	}
	u := URI{Scheme: SchemeTinker, Run: ref.Run, Kind: ref.Kind, Name: ref.Name}
	return ParseURI(u.String())
}
