package openai

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/tokenizer"
)

// ErrConfig is matched by every configuration error New returns.
var ErrConfig = errors.New("openai: bad config")

// Defaults of Options' bounds.
const (
	DefaultMaxInFlight  = 64
	DefaultMaxBodyBytes = 8 << 20
	DefaultMaxAdapters  = 64
	DefaultMaxN         = 128
	// MaxLogprobs bounds completions' logprobs and chat's top_logprobs
	// (OpenAI's documented limit is 5 and 20; vLLM's --max-logprobs is 20).
	MaxLogprobs = 20
)

// Model is one served base model.
type Model struct {
	// Name is the model id clients send (required).
	Name string
	// Root is the model's source shown in /v1/models (default Name).
	Root string
	// MaxModelLen is the longest prompt plus completion, in tokens
	// (required).
	MaxModelLen int
	// VocabSize bounds token ids (required).
	VocabSize int
	// Tokenizer encodes text prompts and decodes completions (required).
	Tokenizer *tokenizer.Tokenizer
	// Renderer names the chat renderer (chat.New) of /v1/chat/completions;
	// default "role_colon".
	Renderer string
}

// Options configure a Handler. Zero values mean the defaults named.
type Options struct {
	// Models are the served base models (at least one; names unique and
	// distinct from adapter names).
	Models []Model
	// NewSampler returns a sampler of the base model called base (version
	// 0, no adapter). It is called once per base model, on first use, and
	// once per loaded adapter (required).
	NewSampler func(ctx context.Context, base string) (rl.Sampler, error)
	// LoadAdapter returns a sampler serving the PEFT adapter in folder dir
	// over base; default NewSampler then Load of the folder.
	LoadAdapter func(ctx context.Context, base, dir string) (rl.Sampler, error)
	// CheckKey reports whether an API key is accepted. Nil means no
	// authentication (tests); tandem serve always sets it.
	CheckKey func(key string) bool
	// MaxInFlight bounds the requests being answered; beyond it the
	// handler answers 429. Default DefaultMaxInFlight.
	MaxInFlight int
	// MaxBodyBytes bounds a request body; default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxAdapters bounds the loaded LoRA adapters; default
	// DefaultMaxAdapters.
	MaxAdapters int
	// MaxN bounds n times the number of prompts of one request; default
	// DefaultMaxN.
	MaxN int
	// Now is the clock of "created" fields; default time.Now.
	Now func() time.Time
}

// KeyChecker returns a CheckKey accepting exactly keys, compared in
// constant time.
func KeyChecker(keys ...string) func(string) bool {
	want := make([][]byte, len(keys))
	for i, k := range keys {
		want[i] = []byte(k)
	}
	return func(key string) bool {
		ok := false
		for _, w := range want {
			if subtle.ConstantTimeCompare([]byte(key), w) == 1 {
				ok = true
			}
		}
		return ok
	}
}

// Validate checks the options.
func (o Options) Validate() error {
	if len(o.Models) == 0 {
		return fmt.Errorf("%w: no model", ErrConfig)
	}
	seen := map[string]bool{}
	for i, m := range o.Models {
		switch {
		case m.Name == "":
			return fmt.Errorf("%w: model %d has no name", ErrConfig, i)
		case seen[m.Name]:
			return fmt.Errorf("%w: model name %q given twice", ErrConfig, m.Name)
		case m.MaxModelLen < 1 || m.VocabSize < 1:
			return fmt.Errorf("%w: model %q: max model length %d and vocabulary size %d must be positive", ErrConfig, m.Name, m.MaxModelLen, m.VocabSize)
		case m.Tokenizer == nil:
			return fmt.Errorf("%w: model %q has no tokenizer", ErrConfig, m.Name)
		}
		seen[m.Name] = true
	}
	if o.NewSampler == nil {
		return fmt.Errorf("%w: no NewSampler", ErrConfig)
	}
	if o.MaxInFlight < 0 || o.MaxBodyBytes < 0 || o.MaxAdapters < 0 || o.MaxN < 0 {
		return fmt.Errorf("%w: negative bound (in flight %d, body %d, adapters %d, n %d); want positive or 0 for the default",
			ErrConfig, o.MaxInFlight, o.MaxBodyBytes, o.MaxAdapters, o.MaxN)
	}
	return nil
}

// base is one served base model and its lazily made sampler.
type base struct {
	Model
	render  chat.Renderer
	eos     []int // the tokenizer's EOS id, stopped on unless ignore_eos
	created int64

	mu      sync.Mutex
	sampler rl.Sampler
}

// adapter is one loaded LoRA adapter.
type adapter struct {
	name, path string
	base       *base
	sampler    rl.Sampler
	created    int64
}

// Handler is the OpenAI-compatible surface; safe for concurrent use.
type Handler struct {
	opts     Options
	bases    map[string]*base
	order    []string // base names in Options order
	mux      *http.ServeMux
	inflight chan struct{}

	mu       sync.Mutex
	adapters map[string]*adapter // loaded and loading (sampler nil) adapters
}

// New checks opts and returns a Handler.
func New(opts Options) (*Handler, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.MaxInFlight == 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxAdapters == 0 {
		opts.MaxAdapters = DefaultMaxAdapters
	}
	if opts.MaxN == 0 {
		opts.MaxN = DefaultMaxN
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.LoadAdapter == nil {
		newSampler := opts.NewSampler
		opts.LoadAdapter = func(ctx context.Context, base, dir string) (rl.Sampler, error) {
			s, err := newSampler(ctx, base)
			if err != nil {
				return nil, err
			}
			if err := s.Load(ctx, policy.Ref{URI: dir, Version: 1, Kind: policy.SamplerWeights}); err != nil {
				return nil, err
			}
			return s, nil
		}
	}
	h := &Handler{opts: opts, bases: map[string]*base{}, adapters: map[string]*adapter{}, inflight: make(chan struct{}, opts.MaxInFlight)}
	now := opts.Now().Unix()
	for _, m := range opts.Models {
		if m.Root == "" {
			m.Root = m.Name
		}
		if m.Renderer == "" {
			m.Renderer = "role_colon"
		}
		cfg := m.Tokenizer.Config()
		r, err := chat.New(m.Renderer, m.Tokenizer, cfg)
		if err != nil {
			return nil, fmt.Errorf("%w: model %q: renderer: %v", ErrConfig, m.Name, err)
		}
		b := &base{Model: m, render: r, created: now}
		if id, ok := m.Tokenizer.TokenID(cfg.EOSToken); ok && cfg.EOSToken != "" {
			b.eos = []int{id}
		}
		h.bases[m.Name] = b
		h.order = append(h.order, m.Name)
	}
	h.routes()
	return h, nil
}

func (h *Handler) routes() {
	h.mux = http.NewServeMux()
	h.mux.HandleFunc("POST /v1/completions", h.endpoint(h.completions))
	h.mux.HandleFunc("POST /v1/chat/completions", h.endpoint(h.chatCompletions))
	h.mux.HandleFunc("GET /v1/models", h.endpoint(h.models))
	h.mux.HandleFunc("POST /v1/load_lora_adapter", h.endpoint(h.loadLoRA))
	h.mux.HandleFunc("POST /v1/unload_lora_adapter", h.endpoint(h.unloadLoRA))
	h.mux.HandleFunc("POST /tokenize", h.endpoint(h.tokenize))
	h.mux.HandleFunc("POST /detokenize", h.endpoint(h.detokenize))
}

// ServeHTTP implements http.Handler. Unknown routes get FastAPI's
// {"detail": "Not Found"} (404) or {"detail": "Method Not Allowed"} (405).
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.opts.CheckKey != nil && !h.opts.CheckKey(apiKey(r)) {
		// vLLM's AuthenticationMiddleware answers exactly this.
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
		return
	}
	if _, pattern := h.mux.Handler(r); pattern == "" {
		if h.knownPath(r.URL.Path) {
			writeDetail(w, http.StatusMethodNotAllowed, "Method Not Allowed")
			return
		}
		writeDetail(w, http.StatusNotFound, "Not Found")
		return
	}
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) knownPath(p string) bool {
	switch p {
	case "/v1/completions", "/v1/chat/completions", "/v1/models", "/v1/load_lora_adapter",
		"/v1/unload_lora_adapter", "/tokenize", "/detokenize":
		return true
	}
	return false
}

// apiKey is the key of Authorization: Bearer <key> (or X-API-Key, as the
// Tinker surface accepts).
func apiKey(r *http.Request) string {
	if a := r.Header.Get("Authorization"); a != "" {
		scheme, key, ok := strings.Cut(a, " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(key)
		}
		return ""
	}
	return r.Header.Get("X-API-Key")
}

// reply is what an endpoint answers: JSON (default), plain text, or the
// chunks of a streamed answer.
type reply struct {
	json   any
	text   string
	stream []any
}

type endpointFunc func(ctx context.Context, body []byte) (reply, error)

// endpoint reads the bounded body, holds an in-flight slot and answers.
func (h *Handler) endpoint(f endpointFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case h.inflight <- struct{}{}:
			defer func() { <-h.inflight }()
		default:
			writeError(w, &APIError{Status: http.StatusTooManyRequests, Type: typeTooMany,
				Message: fmt.Sprintf("the server is answering %d requests, its limit; retry later", cap(h.inflight))})
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, h.opts.MaxBodyBytes+1))
		if err != nil {
			writeError(w, badRequest("", "reading the body: %v", err))
			return
		}
		if int64(len(body)) > h.opts.MaxBodyBytes {
			writeError(w, &APIError{Status: http.StatusRequestEntityTooLarge, Type: typeTooLarge,
				Message: fmt.Sprintf("the body exceeds %d bytes", h.opts.MaxBodyBytes)})
			return
		}
		rep, err := f(r.Context(), body)
		if err != nil {
			writeError(w, err)
			return
		}
		if rep.stream != nil {
			writeStream(w, rep.stream)
			return
		}
		if rep.json == nil {
			writeText(w, http.StatusOK, rep.text)
			return
		}
		writeJSON(w, http.StatusOK, rep.json)
	}
}

// decode unmarshals a JSON object body into v, naming the field at fault.
func decode(body []byte, v any) error {
	if len(strings.TrimSpace(string(body))) == 0 {
		return badRequest("", "the body is empty; want a JSON object")
	}
	if err := json.Unmarshal(body, v); err != nil {
		return decodeError(err)
	}
	return nil
}

// target is what a request samples from.
type target struct {
	name    string
	base    *base
	sampler rl.Sampler
}

// resolve finds the base or loaded adapter called name ("" means the
// first base, as vLLM takes a missing model to mean its served model).
func (h *Handler) resolve(ctx context.Context, name string) (target, error) {
	if name == "" {
		name = h.order[0]
	}
	if b, ok := h.bases[name]; ok {
		s, err := b.samplerOf(ctx, h.opts.NewSampler)
		if err != nil {
			return target{}, internal("model %q: starting its sampler: %v", name, err)
		}
		return target{name: name, base: b, sampler: s}, nil
	}
	h.mu.Lock()
	a, ok := h.adapters[name]
	h.mu.Unlock()
	if !ok || a.sampler == nil {
		return target{}, unknownModel(name)
	}
	return target{name: name, base: a.base, sampler: a.sampler}, nil
}

// baseOf is the base called name ("" the first), or the base of the
// adapter called name, for requests that only tokenize.
func (h *Handler) baseOf(name string) (*base, error) {
	if name == "" {
		return h.bases[h.order[0]], nil
	}
	if b, ok := h.bases[name]; ok {
		return b, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if a, ok := h.adapters[name]; ok && a.sampler != nil {
		return a.base, nil
	}
	return nil, unknownModel(name)
}

func (b *base) samplerOf(ctx context.Context, newSampler func(context.Context, string) (rl.Sampler, error)) (rl.Sampler, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sampler == nil {
		s, err := newSampler(ctx, b.Name)
		if err != nil {
			return nil, err
		}
		b.sampler = s
	}
	return b.sampler, nil
}
