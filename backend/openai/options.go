package openai

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/tandemrl/tandem/policy"
)

// Dialect names the HTTP protocol of the inference engine.
type Dialect string

const (
	// VLLM is vLLM's OpenAI-compatible server: /v1/models,
	// /v1/completions with token-id prompts, /v1/load_lora_adapter and
	// /v1/unload_lora_adapter (runtime LoRA updating enabled).
	VLLM Dialect = "vllm"
	// SGLang is SGLang's native server: /get_model_info,
	// /get_server_info, /generate with input_ids, /load_lora_adapter and
	// /unload_lora_adapter.
	SGLang Dialect = "sglang"
)

// Options configure a Sampler. Zero fields take the defaults in their
// comments; BaseURL and Dialect are required. Options are plain data
// except for the funcs and the HTTP client, which are not serialized.
type Options struct {
	// BaseURL is the server's root, e.g. http://10.0.0.5:8000 (no /v1).
	BaseURL string `json:"base_url"`
	// APIKey, when set, is sent as "Authorization: Bearer <key>" (vLLM's
	// --api-key, SGLang's --api-key).
	APIKey string `json:"-"`
	// Dialect is VLLM or SGLang.
	Dialect Dialect `json:"dialect"`
	// Model is the base model name the server serves (vLLM: the id of the
	// base card in /v1/models, i.e. --served-model-name or the model path;
	// SGLang: model_path of /get_model_info). Empty: take whatever base
	// model the server reports. Samples before any Load use this name.
	Model string `json:"model,omitempty"`
	// HTTPClient sends the requests; default a client with no overall
	// timeout (each request gets RequestTimeout or AdminTimeout).
	HTTPClient *http.Client `json:"-"`

	// RetryInitial, RetryMax and RetryMaxElapsed shape the exponential
	// backoff (multiplier 2, jitter ±25 %) of retried requests; defaults
	// 0.5 s, 10 s and 5 minutes. MaxRetries bounds the retries of one
	// call besides the elapsed time; default 8 (negative: no retries).
	RetryInitial    time.Duration `json:"retry_initial,omitempty"`
	RetryMax        time.Duration `json:"retry_max,omitempty"`
	RetryMaxElapsed time.Duration `json:"retry_max_elapsed,omitempty"`
	MaxRetries      int           `json:"max_retries,omitempty"`

	// RequestTimeout bounds one attempt of a sampling request (the whole
	// generation, as the server answers only when it is done); default
	// 10 minutes. A replica that hangs is abandoned after it, and the
	// attempt retried as a connection error.
	RequestTimeout time.Duration `json:"request_timeout,omitempty"`
	// AdminTimeout bounds one attempt of every other request (models,
	// load, unload, the probe); default 5 minutes (prime-rl's 300 s per
	// admin call).
	AdminTimeout time.Duration `json:"admin_timeout,omitempty"`

	// MaxLoadedVersions is how many adapter versions stay registered on
	// the server, newest first; default 4. Size it ≥ k+1 for a loop of
	// maximum staleness k, and start vLLM with --max-loras ≥ this (and
	// --max-cpu-loras ≥ this + 1). A version still used by a Sample in
	// flight is never unloaded: it stays, over the bound, until that call
	// returns.
	MaxLoadedVersions int `json:"max_loaded_versions,omitempty"`

	// AdapterName names the adapter of a version on the server; default
	// DefaultAdapterName. Names must be unique per version: a version is
	// never reloaded in place under an existing name.
	AdapterName func(policy.Ref) string `json:"-"`
	// PathRewrite maps the adapter folder of a Ref (its URI without a
	// file:// prefix, or the folder ResolveCheckpoint found) to the path
	// the server reads, e.g. a shared mount seen under another prefix on
	// the server host. Default: the path as is. The path is handed to the server unchanged otherwise: the server
	// must be able to read it (a shared file system, or a URL or hub id
	// the server resolves itself), and the folder must not be deleted
	// while the version may be loaded (vLLM re-reads evicted adapters
	// from it).
	PathRewrite func(string) (string, error) `json:"-"`
	// ResolveCheckpoint maps a tinker:// URI (what tandem's trainers
	// publish) to its folder, e.g. through a checkpoint store
	// (checkpoint.Store.Resolve(uri).Dir) the server can read; nil refuses
	// tinker:// refs.
	ResolveCheckpoint func(uri string) (string, error) `json:"-"`

	// MaxModelLen overrides the context length learned from the server
	// (vLLM: max_model_len of the base card; SGLang: context_length of
	// /get_server_info); 0 keeps the server's. Sample clamps max_tokens
	// so prompt + completion fit.
	MaxModelLen int `json:"max_model_len,omitempty"`

	// SkipLogprobsProbe skips New's check that the server returns
	// log-probs of the distribution actually sampled from (vLLM:
	// --logprobs-mode processed_logprobs). Set it only for servers that
	// cannot answer the probe (e.g. no top_k support); the losses are
	// then computed against whatever log-probs the server returns.
	SkipLogprobsProbe bool `json:"skip_logprobs_probe,omitempty"`
	// ProbePrompt is the prompt of the probe; default [0] (token 0 exists
	// in every vocabulary).
	ProbePrompt []int `json:"probe_prompt,omitempty"`

	// Seed seeds the stream of per-call seeds drawn when a call gives
	// none (a seed is always sent).
	Seed uint64 `json:"seed,omitempty"`

	timer func() backoff.Timer // tests: the timer retries wait on
	clock backoff.Clock        // tests: the clock of RetryMaxElapsed
}

// ErrOptions is matched by every configuration error.
var ErrOptions = errors.New("openai: bad options")

// DefaultAdapterName names version v of run r "r-v000017" ("tandem-v…"
// when the ref has no run): letters, digits, '-', '_' and '.' only, valid
// on vLLM, SGLang and common routers.
func DefaultAdapterName(ref policy.Ref) string {
	run := ref.Run
	if run == "" {
		run = "tandem"
	}
	return fmt.Sprintf("%s-v%06d", run, ref.Version)
}

func (o Options) withDefaults() Options {
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.RetryInitial, 500*time.Millisecond)
	def(&o.RetryMax, 10*time.Second)
	def(&o.RetryMaxElapsed, 5*time.Minute)
	def(&o.RequestTimeout, 10*time.Minute)
	def(&o.AdminTimeout, 5*time.Minute)
	if o.MaxRetries == 0 {
		o.MaxRetries = 8
	}
	if o.MaxLoadedVersions == 0 {
		o.MaxLoadedVersions = 4
	}
	if o.AdapterName == nil {
		o.AdapterName = DefaultAdapterName
	}
	if o.PathRewrite == nil {
		o.PathRewrite = func(p string) (string, error) { return p, nil }
	}
	if len(o.ProbePrompt) == 0 {
		o.ProbePrompt = []int{0}
	}
	if o.timer == nil {
		o.timer = func() backoff.Timer { return &realTimer{} }
	}
	if o.clock == nil {
		o.clock = backoff.SystemClock
	}
	return o
}

// Validate checks the options after defaults.
func (o Options) Validate() error {
	o = o.withDefaults()
	u, err := url.Parse(o.BaseURL)
	if o.BaseURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: base URL %q: want http(s)://host[:port][/prefix]", ErrOptions, o.BaseURL)
	}
	switch o.Dialect {
	case VLLM, SGLang:
	default:
		return fmt.Errorf("%w: dialect %q: want %q or %q", ErrOptions, o.Dialect, VLLM, SGLang)
	}
	for name, d := range map[string]time.Duration{
		"RetryInitial": o.RetryInitial, "RetryMax": o.RetryMax, "RetryMaxElapsed": o.RetryMaxElapsed,
		"RequestTimeout": o.RequestTimeout, "AdminTimeout": o.AdminTimeout,
	} {
		if d < 0 {
			return fmt.Errorf("%w: %s is negative (%v)", ErrOptions, name, d)
		}
	}
	if o.MaxLoadedVersions < 1 {
		return fmt.Errorf("%w: MaxLoadedVersions %d must be at least 1 (k+1 for staleness k)", ErrOptions, o.MaxLoadedVersions)
	}
	if o.MaxModelLen < 0 {
		return fmt.Errorf("%w: MaxModelLen %d is negative", ErrOptions, o.MaxModelLen)
	}
	for i, t := range o.ProbePrompt {
		if t < 0 {
			return fmt.Errorf("%w: ProbePrompt[%d] = %d is not a token id", ErrOptions, i, t)
		}
	}
	return nil
}

// realTimer is backoff's timer (its default is unexported).
type realTimer struct{ t *time.Timer }

func (r *realTimer) Start(d time.Duration) {
	if r.t == nil {
		r.t = time.NewTimer(d)
	} else {
		r.t.Reset(d)
	}
}

func (r *realTimer) Stop() {
	if r.t != nil {
		r.t.Stop()
	}
}

func (r *realTimer) C() <-chan time.Time { return r.t.C }
