package ui

import (
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"time"
)

//go:embed assets
var assets embed.FS

// Options configure a Handler. The zero value means the documented
// defaults.
type Options struct {
	// APIKey, when set, is required of every request: X-API-Key: <key> or
	// Authorization: Bearer <key> (tandem serve's scheme), or, for a
	// browser, ?api_key=<key> once, which sets a same-site cookie.
	APIKey string
	// PollInterval is how often an event stream checks metrics.jsonl's size
	// (default 500ms).
	PollInterval time.Duration
	// StaleAfter is how long a run without summary.json may go without a
	// metrics write and still count as running (default 2 minutes).
	StaleAfter time.Duration
	// Now returns the time (default time.Now); tests fix it.
	Now func() time.Time
	// Sampler serves the playground (default EngineSampler{}: the embedded
	// engine in process).
	Sampler Sampler
	// SampleTimeout bounds one playground request, its wait for an earlier
	// one included (default 2 minutes).
	SampleTimeout time.Duration
}

// Validate checks the options.
func (o Options) Validate() error {
	if o.PollInterval < 0 || o.StaleAfter < 0 || o.SampleTimeout < 0 {
		return errors.New("ui: PollInterval, StaleAfter and SampleTimeout must not be negative")
	}
	return nil
}

func (o Options) withDefaults() Options {
	if o.PollInterval == 0 {
		o.PollInterval = 500 * time.Millisecond
	}
	if o.StaleAfter == 0 {
		o.StaleAfter = 2 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sampler == nil {
		o.Sampler = EngineSampler{}
	}
	if o.SampleTimeout == 0 {
		o.SampleTimeout = sampleTimeoutDef
	}
	return o
}

// Handler serves the dashboard of one runs folder. It is safe for
// concurrent use; it keeps nothing between requests, so each page costs
// one read of the files it shows. Playground samples run one at a time.
type Handler struct {
	root     string
	opts     Options
	mux      *http.ServeMux
	tmpl     *template.Template
	sampling chan struct{} // size 1: held while a playground sample runs
}

// New returns the dashboard of the runs folder root.
func New(root string, opts Options) (*Handler, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("ui: runs folder %s: %w", root, err)
	}
	tmpl, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	h := &Handler{root: abs, opts: opts.withDefaults(), mux: http.NewServeMux(), tmpl: tmpl,
		sampling: make(chan struct{}, 1)}
	static, err := fs.Sub(assets, "assets/static")
	if err != nil {
		return nil, err
	}
	h.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	h.mux.HandleFunc("GET /{$}", h.serveList)
	h.mux.HandleFunc("GET /runs/{run}", h.serveRun)
	h.mux.HandleFunc("GET /runs/{run}/events", h.serveEvents)
	h.mux.HandleFunc("GET /runs/{run}/checkpoints", h.serveCheckpoints)
	h.mux.HandleFunc("POST /runs/{run}/sample", h.serveSample)
	h.mux.HandleFunc("GET /runs/{run}/samples", h.serveSamples)
	h.mux.HandleFunc("GET /compare", h.serveCompare)
	return h, nil
}

// keyCookie holds the API key a browser gave once with ?api_key=.
const keyCookie = "tandem_ui_key"

// ServeHTTP checks the API key, when one is set, and serves the request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.opts.APIKey != "" {
		if q := r.URL.Query().Get("api_key"); q != "" && h.keyOK(q) {
			http.SetCookie(w, &http.Cookie{Name: keyCookie, Value: q, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			u := *r.URL
			v := u.Query()
			v.Del("api_key")
			u.RawQuery = v.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		if msg := h.authorize(r); msg != "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="tandem ui"`)
			http.Error(w, msg, http.StatusUnauthorized)
			return
		}
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:")
	h.mux.ServeHTTP(w, r)
}

// authorize returns "" when r carries the key, else what is wrong.
func (h *Handler) authorize(r *http.Request) string {
	key := r.Header.Get("X-API-Key")
	if key == "" {
		if auth := r.Header.Get("Authorization"); auth != "" {
			scheme, rest, _ := strings.Cut(auth, " ")
			if !strings.EqualFold(scheme, "Bearer") {
				return fmt.Sprintf("Authorization scheme %q unsupported; want Bearer <key> or an X-API-Key header", scheme)
			}
			key = strings.TrimSpace(rest)
		}
	}
	if key == "" {
		if c, err := r.Cookie(keyCookie); err == nil {
			key = c.Value
		}
	}
	switch {
	case key == "":
		return "missing API key; send X-API-Key: <key> or Authorization: Bearer <key>, or open /?api_key=<key> in a browser"
	case !h.keyOK(key):
		return "API key not accepted"
	}
	return ""
}

func (h *Handler) keyOK(key string) bool {
	return subtle.ConstantTimeCompare([]byte(key), []byte(h.opts.APIKey)) == 1
}

// run loads the run the request's {run} names, answering the error itself
// (400 for a bad name, 404 for none) when it cannot.
func (h *Handler) run(w http.ResponseWriter, r *http.Request, name string) (*runData, bool) {
	dir, err := runDir(h.root, name)
	if err != nil {
		h.fail(w, err)
		return nil, false
	}
	d, err := loadRun(dir, name, h.opts.Now(), h.opts.StaleAfter)
	if err != nil {
		h.fail(w, err)
		return nil, false
	}
	return d, true
}

// fail answers err with its status: 400 for a bad name, 404 for a missing
// run, 500 otherwise.
func (h *Handler) fail(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrBadName):
		code = http.StatusBadRequest
	case errors.Is(err, ErrNoRun):
		code = http.StatusNotFound
	}
	http.Error(w, err.Error(), code)
}
