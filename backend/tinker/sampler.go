package tinker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/wire"
)

// Sampler samples from a Tinker-compatible server through a sampling
// session; it implements rl.Sampler. Safe for concurrent use: calls run in
// parallel, each on the session current when it started.
type Sampler struct {
	c    *Client
	base string

	mu      sync.Mutex
	session string      // sampling_session_id; empty until first use
	ref     *policy.Ref // what the session serves; nil for the base model
	seq     int64       // next seq_id in the session
}

var _ rl.Sampler = (*Sampler)(nil)

// maxExpiredRetries bounds how often a sample whose future expired (410)
// is sent again; the SDK retries it as a transient error.
const maxExpiredRetries = 3

// Load opens a sampling session on ref (a tinker://…/sampler_weights/…
// path) for calls that start after Load returns.
func (s *Sampler) Load(ctx context.Context, ref policy.Ref) error {
	if _, err := wire.ParseTinkerPath(ref.URI); err != nil {
		return err
	}
	id, err := s.open(ctx, wire.CreateSamplingSessionRequest{ModelPath: ref.URI})
	if err != nil {
		return fmt.Errorf("tinker: load %s: %w", ref.URI, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.session, s.ref, s.seq = id, &ref, 0
	return nil
}

func (s *Sampler) open(ctx context.Context, req wire.CreateSamplingSessionRequest) (string, error) {
	req.SessionID = s.c.sessionID
	req.SamplingSessionSeqID = s.c.samplingSeq.Add(1) - 1
	b, err := s.c.postJSON(ctx, "/api/v1/create_sampling_session", req, nil)
	if err != nil {
		return "", err
	}
	r, err := wire.DecodeCreateSamplingSessionResponse(b)
	if err != nil {
		return "", err
	}
	return r.SamplingSessionID, nil
}

// Loaded returns the ref being served, or false for the base model.
func (s *Sampler) Loaded() (policy.Ref, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ref == nil {
		return policy.Ref{}, false
	}
	return *s.ref, true
}

// next reserves a seq_id in the current session, opening a base-model
// session on first use.
func (s *Sampler) next(ctx context.Context) (session string, seq int64, v policy.Version, err error) {
	s.mu.Lock()
	if s.session == "" {
		s.mu.Unlock()
		id, err := s.open(ctx, wire.CreateSamplingSessionRequest{BaseModel: s.base})
		if err != nil {
			return "", 0, 0, fmt.Errorf("tinker: open sampling session of %s: %w", s.base, err)
		}
		s.mu.Lock()
		if s.session == "" {
			s.session = id
		}
	}
	defer s.mu.Unlock()
	seq = s.seq
	s.seq++
	if s.ref != nil {
		v = s.ref.Version
	}
	return s.session, seq, v, nil
}

// Sample draws n completions of prompt (POST asample, then polls), with
// the log-prob of each prompt token when p.PromptLogprobs asks. The
// output's Version is the version the server reports having sampled from
// (policy_version, a tandem extension), or else the version of the adapter
// the session serves.
func (s *Sampler) Sample(ctx context.Context, prompt rl.ModelInput, n int, p rl.SamplingParams) (rl.SampleOutput, error) {
	return s.sample(ctx, prompt, n, p, nil)
}

// SampleAtLeast is Sample asking for version min or newer (the tandem
// extension min_policy_version): a tandem server samples from the newest
// sampler checkpoint of the loaded adapter's run that is at least min,
// waiting a bounded time for it to be published. Servers that do not know
// the field ignore it, so check the output's Version when it matters. Its
// result is polled in JSON in either Mode, as only JSON carries the
// version served.
func (s *Sampler) SampleAtLeast(ctx context.Context, prompt rl.ModelInput, n int, p rl.SamplingParams, min policy.Version) (rl.SampleOutput, error) {
	m := int64(min)
	return s.sample(ctx, prompt, n, p, &m)
}

// submitSample posts asample as the SDK does: with
// X-Tinker-Sampling-Backpressure, and a 429 makes every sample of the
// client wait 1 s (5 s for a prompt over 128 KiB, estimating 10 bytes a
// token) before this one is sent again, with the same seq_id; there is no
// limit on how often, as in the SDK. Every other error is retried by send.
func (c *Client) submitSample(ctx context.Context, req wire.SampleRequest) (string, error) {
	wait := sampleBackoffSmall
	if 10*req.Prompt.Len() > sampleBackoffBytes {
		wait = sampleBackoffLarge
	}
	for {
		if d := c.pauses.sampleWait(c.clock.now()); d > 0 {
			if err := c.clock.sleep(ctx, d); err != nil {
				return "", err
			}
			continue
		}
		r, err := encode("/api/v1/asample", req, map[string]string{"X-Tinker-Sampling-Backpressure": "1"})
		if err != nil {
			return "", err
		}
		r.backpressure = true
		id, err := c.submitRequest(ctx, "asample", r)
		var se *StatusError
		if errors.As(err, &se) && se.Status == http.StatusTooManyRequests {
			c.retries.Add(1)
			c.pauses.backOffSamples(c.clock.now(), wait)
			continue
		}
		return id, err
	}
}

func (s *Sampler) sample(ctx context.Context, prompt rl.ModelInput, n int, p rl.SamplingParams, min *int64) (rl.SampleOutput, error) {
	params, err := wire.SamplingParamsFromRL(p)
	if err != nil {
		return rl.SampleOutput{}, err
	}
	if n < 1 {
		return rl.SampleOutput{}, fmt.Errorf("tinker: sample: n = %d, want ≥ 1", n)
	}
	for attempt := 0; ; attempt++ {
		session, seq, v, err := s.next(ctx)
		if err != nil {
			return rl.SampleOutput{}, err
		}
		req := wire.SampleRequest{SamplingSessionID: session, SeqID: &seq, NumSamples: n, Prompt: prompt, SamplingParams: params, MinPolicyVersion: min, PromptLogprobs: p.PromptLogprobs, TopKPromptLogprobs: p.TopKPromptLogprobs}
		id, err := s.c.submitSample(ctx, req)
		if err != nil {
			return rl.SampleOutput{}, fmt.Errorf("tinker: sample: %w", err)
		}
		var raw answer
		if min != nil {
			// The version served, which may be newer than the session's,
			// comes only in JSON (policy_version): protobuf's
			// SampleResponse has no field for it.
			raw.body, err = s.c.poll(ctx, id)
		} else {
			raw, err = s.c.pollAny(ctx, id)
		}
		if errors.Is(err, ErrFutureExpired) && attempt < maxExpiredRetries {
			continue
		}
		if err != nil {
			return rl.SampleOutput{}, fmt.Errorf("tinker: sample: %w", err)
		}
		decode := wire.DecodeSampleResponse
		if raw.proto {
			decode = wire.DecodeSampleResponseProto
		}
		r, err := decode(raw.body)
		if err != nil {
			return rl.SampleOutput{}, fmt.Errorf("tinker: sample result: %w", err)
		}
		if r.PolicyVersion != nil {
			v = policy.Version(*r.PolicyVersion)
		}
		out := rl.SampleOutput{Version: v, Sequences: make([]rl.Sequence, len(r.Sequences)), TopKPromptLogprobs: r.TopKToRL()}
		for i, sq := range r.Sequences {
			out.Sequences[i] = rl.Sequence{Tokens: sq.Tokens, Logprobs: sq.Logprobs, StopReason: sq.StopReason}
		}
		if len(r.PromptLogprobs) > 0 {
			out.PromptLogprobs = make([]float64, len(r.PromptLogprobs))
			for i, lp := range r.PromptLogprobs {
				if lp != nil { // the first is null: 0, as rl.SampleOutput documents
					out.PromptLogprobs[i] = *lp
				}
			}
		}
		return out, nil
	}
}
