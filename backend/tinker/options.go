package tinker

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// Environment variables the SDK reads, read the same way here.
const (
	EnvBaseURL = "TINKER_BASE_URL"
	EnvAPIKey  = "TINKER_API_KEY"
	EnvTags    = "TINKER_TAGS" // comma-separated session tags
	// Cloudflare Access credentials, sent as CF-Access-Client-Id/-Secret.
	EnvCFClientID     = "CLOUDFLARE_ACCESS_CLIENT_ID"
	EnvCFClientSecret = "CLOUDFLARE_ACCESS_CLIENT_SECRET"
)

// SDK versions this client mirrors. SDKVersion is the JSON protocol of
// SDK v0.3.0, spoken to servers without client/config (and when
// Options.ForceJSON is set); ProtoSDKVersion is the protocol of SDK
// v0.25.0 (protobuf forward_backward and results), sent in client/config
// and, toward servers that answer it, in create_session.
const (
	SDKVersion      = "0.3.0"
	ProtoSDKVersion = "0.25.0"
)

// Options configure a Client. Zero fields take the defaults in their
// comments; BaseURL and APIKey fall back to TINKER_BASE_URL and
// TINKER_API_KEY, and one of each is required.
type Options struct {
	BaseURL string
	APIKey  string
	// HTTPClient sends the requests; default a client with no overall
	// timeout (each poll has its own).
	HTTPClient *http.Client
	// Heartbeat is the session heartbeat period; default 10 s (the SDK's).
	Heartbeat time.Duration
	// RetryInitial, RetryMax and RetryMaxElapsed shape the exponential
	// backoff of retried requests; defaults 0.5 s, 10 s and 5 minutes
	// (the SDK's INITIAL_RETRY_DELAY, MAX_RETRY_DELAY and the 5-minute
	// limit of its execute_with_retries).
	RetryInitial    time.Duration
	RetryMax        time.Duration
	RetryMaxElapsed time.Duration
	// PollTimeout bounds one retrieve_future request; default 45 s (the SDK's).
	PollTimeout time.Duration
	// PollInterval is the pause after a try_again answer; default 100 ms.
	PollInterval time.Duration
	// Tags and UserMetadata are sent with create_session; Tags defaults to
	// TINKER_TAGS split at commas.
	Tags         []string
	UserMetadata map[string]any
	// Headers are added to every request. CF-Access-Client-Id and
	// CF-Access-Client-Secret default to the CLOUDFLARE_ACCESS_* variables,
	// as in the SDK.
	Headers map[string]string
	// ForceJSON keeps the client on the v0.3.0 JSON protocol: it does not
	// ask client/config and sends and reads only JSON, as toward a server
	// that does not know client/config. Off, the client speaks protobuf to
	// a server that answers client/config (see Client.Mode).
	ForceJSON bool

	clock *clock // tests: the time pauses wait on; nil means real time
}

// ErrOptions is matched by every configuration error.
var ErrOptions = errors.New("tinker: bad options")

// withDefaults fills zero fields from the environment and the defaults.
func (o Options) withDefaults() Options {
	if o.BaseURL == "" {
		o.BaseURL = os.Getenv(EnvBaseURL)
	}
	if o.APIKey == "" {
		o.APIKey = os.Getenv(EnvAPIKey)
	}
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	if o.Tags == nil {
		if v := os.Getenv(EnvTags); v != "" {
			o.Tags = strings.Split(v, ",")
		}
	}
	h := make(map[string]string, len(o.Headers)+2)
	for k, v := range map[string]string{"CF-Access-Client-Id": os.Getenv(EnvCFClientID), "CF-Access-Client-Secret": os.Getenv(EnvCFClientSecret)} {
		if v != "" {
			h[k] = v
		}
	}
	for k, v := range o.Headers {
		h[k] = v
	}
	o.Headers = h
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.Heartbeat, 10*time.Second)
	def(&o.RetryInitial, 500*time.Millisecond)
	def(&o.RetryMax, 10*time.Second)
	def(&o.RetryMaxElapsed, 5*time.Minute)
	def(&o.PollTimeout, 45*time.Second)
	def(&o.PollInterval, 100*time.Millisecond)
	return o
}

// Validate checks the options after defaults.
func (o Options) Validate() error {
	o = o.withDefaults()
	if o.BaseURL == "" {
		return fmt.Errorf("%w: no base URL; set Options.BaseURL or %s", ErrOptions, EnvBaseURL)
	}
	u, err := url.Parse(o.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%w: base URL %q: want http(s)://host[:port][/prefix]", ErrOptions, o.BaseURL)
	}
	if o.APIKey == "" {
		return fmt.Errorf("%w: no API key; set Options.APIKey or %s", ErrOptions, EnvAPIKey)
	}
	for name, d := range map[string]time.Duration{
		"Heartbeat": o.Heartbeat, "RetryInitial": o.RetryInitial, "RetryMax": o.RetryMax,
		"RetryMaxElapsed": o.RetryMaxElapsed, "PollTimeout": o.PollTimeout, "PollInterval": o.PollInterval,
	} {
		if d < 0 {
			return fmt.Errorf("%w: %s is negative (%v)", ErrOptions, name, d)
		}
	}
	return nil
}
