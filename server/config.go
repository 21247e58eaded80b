package server

import (
	"errors"
	"fmt"
	"net"
	"time"
)

// Role says which half of the API a server offers.
type Role string

const (
	RoleBoth    Role = "both"    // training and sampling (the default)
	RoleTrainer Role = "trainer" // create_model, forward, forward_backward, optim_step, save/load weights
	RoleSampler Role = "sampler" // create_sampling_session, asample
)

// ModelSpec describes a base model the server offers. Zero VocabSize or
// MaxContextLength means "not checked by the server" (the backend still may).
type ModelSpec struct {
	Name             string `json:"name"`
	MaxContextLength int    `json:"max_context_length,omitempty"`
	VocabSize        int    `json:"vocab_size,omitempty"`
	// TokenizerID is what get_info reports as model_data.tokenizer_id,
	// which the SDK's get_tokenizer hands to AutoTokenizer.from_pretrained:
	// a Hub id or a folder holding tokenizer.json; default the Name.
	TokenizerID string `json:"tokenizer_id,omitempty"`
}

// Config configures a Server. The zero value of each field means the
// default in its comment; APIKeys has no default and must be set.
type Config struct {
	// Addr is where `tandem serve` listens; default 127.0.0.1:8000
	// (loopback: exposing the server is an explicit choice).
	Addr string `json:"addr"`
	// Role selects the endpoints served; default RoleBoth.
	Role Role `json:"role"`
	// APIKeys are the accepted keys (X-API-Key or Authorization: Bearer).
	// Each key is a separate tenant: its sessions and models are invisible
	// to the others. Required.
	APIKeys []string `json:"-"`
	// Models lists the base models offered; empty accepts any name the
	// backend accepts.
	Models []ModelSpec `json:"models,omitempty"`
	// MaxBodyBytes bounds a request body; default 16 MiB (the SDK splits
	// batches into requests of at most 500,000 numbers, a few MiB of JSON).
	MaxBodyBytes int64 `json:"max_body_bytes"`
	// MaxDecoding bounds how many request bodies are read and decoded at
	// once, which bounds the memory decoding takes; default 4. Polls and
	// heartbeats (bodies of at most 64 KiB) do not count.
	MaxDecoding int `json:"max_decoding"`
	// MaxInFlight bounds unfinished futures per server; beyond it calls are
	// answered 429. Default 256.
	MaxInFlight int `json:"max_in_flight"`
	// MaxResults bounds the finished results kept for retrieve_future;
	// beyond it the oldest expire early (410). Default 4096.
	MaxResults int `json:"max_results"`
	// MaxSessions bounds live sessions per key; default 64.
	MaxSessions int `json:"max_sessions"`
	// MaxModels bounds live models per key; default 16.
	MaxModels int `json:"max_models"`
	// MaxSamplers bounds the samplers kept loaded; default 16.
	MaxSamplers int `json:"max_samplers"`
	// SessionTTL is how long a session lives without a heartbeat or a call;
	// default 2 minutes (the SDK heartbeats every 10 s).
	SessionTTL time.Duration `json:"session_ttl"`
	// FutureTTL is how long a finished future's result is kept; default 10
	// minutes. A later retrieve_future answers 410.
	FutureTTL time.Duration `json:"future_ttl"`
	// SeqWait bounds how long a training call whose seq_id is ahead of the
	// next expected one waits for the gap to fill; default 60 s.
	SeqWait time.Duration `json:"seq_wait"`
	// PollWait is how long retrieve_future holds an unfinished call before
	// answering try_again; default 5 s (the SDK's poll timeout is 45 s).
	PollWait time.Duration `json:"poll_wait"`
	// DefaultMaxTokens is used when a sample request has no max_tokens;
	// default 128.
	DefaultMaxTokens int `json:"default_max_tokens"`
	// VersionWait bounds how long a sample request with min_policy_version
	// (a tandem extension) waits for a new enough version to be published;
	// default 60 s.
	VersionWait time.Duration `json:"version_wait"`
}

// DefaultConfig returns a Config with every default filled and no API key.
func DefaultConfig() Config { return Config{}.withDefaults() }

func (c Config) withDefaults() Config {
	if c.Addr == "" {
		c.Addr = "127.0.0.1:8000"
	}
	if c.Role == "" {
		c.Role = RoleBoth
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 16 << 20
	}
	if c.MaxDecoding == 0 {
		c.MaxDecoding = 4
	}
	if c.MaxInFlight == 0 {
		c.MaxInFlight = 256
	}
	if c.MaxResults == 0 {
		c.MaxResults = 4096
	}
	if c.MaxSessions == 0 {
		c.MaxSessions = 64
	}
	if c.MaxModels == 0 {
		c.MaxModels = 16
	}
	if c.MaxSamplers == 0 {
		c.MaxSamplers = 16
	}
	if c.SessionTTL == 0 {
		c.SessionTTL = 2 * time.Minute
	}
	if c.FutureTTL == 0 {
		c.FutureTTL = 10 * time.Minute
	}
	if c.SeqWait == 0 {
		c.SeqWait = time.Minute
	}
	if c.PollWait == 0 {
		c.PollWait = 5 * time.Second
	}
	if c.DefaultMaxTokens == 0 {
		c.DefaultMaxTokens = 128
	}
	if c.VersionWait == 0 {
		c.VersionWait = time.Minute
	}
	return c
}

// ErrConfig is matched by every configuration error.
var ErrConfig = errors.New("server: bad config")

// Validate checks every field (after defaults).
func (c Config) Validate() error {
	c = c.withDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	switch c.Role {
	case RoleBoth, RoleTrainer, RoleSampler:
	default:
		return bad("role %q unknown; want trainer, sampler or both", c.Role)
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return bad("addr %q: %v; want host:port, e.g. 127.0.0.1:8000", c.Addr, err)
	}
	if len(c.APIKeys) == 0 {
		return bad("no API key; set at least one (an API key is always required)")
	}
	for i, k := range c.APIKeys {
		if len(k) < 8 {
			return bad("API key %d is %d characters; want at least 8", i, len(k))
		}
	}
	for i, m := range c.Models {
		if m.Name == "" {
			return bad("models[%d] has no name", i)
		}
		if m.MaxContextLength < 0 || m.VocabSize < 0 {
			return bad("models[%d] (%s): negative limit", i, m.Name)
		}
	}
	pos := []struct {
		name string
		v    int64
	}{
		{"max_body_bytes", c.MaxBodyBytes}, {"max_decoding", int64(c.MaxDecoding)}, {"max_in_flight", int64(c.MaxInFlight)}, {"max_results", int64(c.MaxResults)},
		{"max_sessions", int64(c.MaxSessions)}, {"max_models", int64(c.MaxModels)},
		{"max_samplers", int64(c.MaxSamplers)}, {"session_ttl", int64(c.SessionTTL)},
		{"future_ttl", int64(c.FutureTTL)}, {"seq_wait", int64(c.SeqWait)},
		{"poll_wait", int64(c.PollWait)}, {"default_max_tokens", int64(c.DefaultMaxTokens)},
		{"version_wait", int64(c.VersionWait)},
	}
	for _, p := range pos {
		if p.v < 0 {
			return bad("%s is negative (%d); want a positive value or 0 for the default", p.name, p.v)
		}
	}
	return nil
}

func (c Config) serves(r Role) bool { return c.Role == RoleBoth || c.Role == r }
