package tinker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tandemrl/tandem/sync/serial"
	"github.com/tandemrl/tandem/wire"
)

// ErrClosed is the cause of calls cut short by Client.Close.
var ErrClosed = errors.New("tinker: client closed")

// Client is a session with a Tinker-compatible server. It owns a heartbeat
// goroutine and the queues that carry its trainers' calls; Close ends
// them. A Client is safe for concurrent use.
type Client struct {
	opts      Options
	sessionID string
	mode      Mode
	config    wire.ClientConfigResponse // the server's client/config answer (ModeProto)
	chunking  chunkLimits

	ctx    context.Context // ends on Close
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup

	qmu     sync.Mutex
	queues  []*serial.Queue // of the trainers made by this client
	qclosed bool

	modelSeq    atomic.Int64 // next model_seq_id
	samplingSeq atomic.Int64 // next sampling_session_seq_id
	retries     atomic.Int64 // requests retried, for tests and metrics
	pauses      pauses
	clock       clock

	hbMu    sync.Mutex
	hbErr   error
	hbLast  time.Time
	hbCount int
}

// New asks the server for its client/config (unless Options.ForceJSON),
// creates a session (POST create_session) and starts its heartbeat. A
// server that answers client/config is spoken to in protobuf where SDK
// v0.25.0 does (ModeProto); one that answers 404 is an older server,
// spoken to in SDK v0.3.0's JSON (ModeJSON).
func New(ctx context.Context, opts Options) (*Client, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	lctx, cancel := context.WithCancelCause(context.Background())
	c := &Client{opts: opts, ctx: lctx, cancel: cancel, mode: ModeJSON, chunking: jsonChunkLimits, clock: realClock}
	if opts.clock != nil {
		c.clock = *opts.clock
	}
	sdk := SDKVersion
	if !opts.ForceJSON {
		cfg, ok, err := c.fetchConfig(ctx)
		if err != nil {
			cancel(ErrClosed)
			return nil, fmt.Errorf("tinker: client config: %w", err)
		}
		if ok {
			c.mode, c.config, c.chunking, sdk = ModeProto, cfg, protoChunkLimits(cfg), ProtoSDKVersion
		}
	}
	tags := opts.Tags
	if tags == nil {
		tags = []string{}
	}
	meta := opts.UserMetadata
	if meta == nil {
		meta = map[string]any{}
	}
	b, err := c.postJSON(ctx, "/api/v1/create_session", wire.CreateSessionRequest{Tags: tags, UserMetadata: meta, SDKVersion: sdk}, nil)
	if err != nil {
		cancel(ErrClosed)
		return nil, fmt.Errorf("tinker: create session: %w", err)
	}
	r, err := wire.DecodeCreateSessionResponse(b)
	if err != nil {
		cancel(ErrClosed)
		return nil, fmt.Errorf("tinker: create session answer: %w", err)
	}
	if r.ErrorMessage != "" {
		cancel(ErrClosed)
		return nil, fmt.Errorf("tinker: create session: server says: %s", r.ErrorMessage)
	}
	c.sessionID = r.SessionID
	c.hbLast = time.Now()
	c.goOwned(c.heartbeat)
	return c, nil
}

// SessionID returns the server's id of this client's session.
func (c *Client) SessionID() string { return c.sessionID }

// Retries returns how many requests were retried so far.
func (c *Client) Retries() int64 { return c.retries.Load() }

// Close stops the heartbeat and cancels the calls still running or queued
// (they fail with ErrClosed), then waits for the client's goroutines.
func (c *Client) Close() error {
	c.cancel(ErrClosed)
	c.qmu.Lock()
	queues := c.queues
	c.qclosed = true
	c.qmu.Unlock()
	for _, q := range queues {
		q.Close()
	}
	c.wg.Wait()
	return nil
}

// newQueue returns a queue that Close closes and waits for (closed
// already if Close has run).
func (c *Client) newQueue() *serial.Queue {
	q := &serial.Queue{}
	c.qmu.Lock()
	defer c.qmu.Unlock()
	if c.qclosed {
		q.Close()
	}
	c.queues = append(c.queues, q)
	return q
}

func (c *Client) goOwned(f func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		f()
	}()
}

// heartbeat posts session_heartbeat every Heartbeat period, without
// retries (as the SDK does), until Close.
func (c *Client) heartbeat() {
	t := time.NewTicker(c.opts.Heartbeat)
	defer t.Stop()
	body, _ := json.Marshal(wire.SessionHeartbeatRequest{SessionID: c.sessionID})
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
		_, err := c.do(c.ctx, request{method: http.MethodPost, path: "/api/v1/session_heartbeat", body: body, timeout: 10 * time.Second})
		c.hbMu.Lock()
		c.hbErr = err
		if err == nil {
			c.hbLast = time.Now()
			c.hbCount++
		}
		c.hbMu.Unlock()
	}
}

// HeartbeatStatus returns how many heartbeats succeeded, when the last one
// did, and the error of the latest attempt (nil if it succeeded).
func (c *Client) HeartbeatStatus() (count int, last time.Time, err error) {
	c.hbMu.Lock()
	defer c.hbMu.Unlock()
	return c.hbCount, c.hbLast, c.hbErr
}

// Capabilities asks the server which base models it offers.
func (c *Client) Capabilities(ctx context.Context) (wire.GetServerCapabilitiesResponse, error) {
	b, err := c.send(ctx, request{method: http.MethodGet, path: "/api/v1/get_server_capabilities"})
	if err != nil {
		return wire.GetServerCapabilitiesResponse{}, err
	}
	return wire.DecodeGetServerCapabilitiesResponse(b)
}

// NewTrainer creates a LoRA model of base (POST create_model) and returns
// a Trainer driving it. A zero lora means wire.DefaultLoraConfig.
func (c *Client) NewTrainer(ctx context.Context, base string, lora wire.LoraConfig) (*Trainer, error) {
	if lora.Rank == 0 {
		lora = wire.DefaultLoraConfig()
	}
	req := wire.CreateModelRequest{SessionID: c.sessionID, ModelSeqID: c.modelSeq.Add(1) - 1, BaseModel: base, LoraConfig: lora}
	id, err := c.submit(ctx, "create_model", req, nil)
	if err != nil {
		return nil, fmt.Errorf("tinker: create model: %w", err)
	}
	raw, err := c.poll(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("tinker: create model: %w", err)
	}
	r, err := wire.DecodeCreateModelResponse(raw)
	if err != nil {
		return nil, fmt.Errorf("tinker: create model result: %w", err)
	}
	return newTrainer(c, r.ModelID, base), nil
}

// NewSampler returns a Sampler of base. It samples the base model (version
// 0) until Load points it at a saved adapter.
func (c *Client) NewSampler(base string) *Sampler { return &Sampler{c: c, base: base} }
