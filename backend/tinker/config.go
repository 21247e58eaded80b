package tinker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/tandemrl/tandem/wire"
)

// Mode is the protocol a Client speaks.
type Mode int

const (
	// ModeJSON is SDK v0.3.0's protocol: JSON bodies and JSON results, the
	// forward endpoint for forward passes, chunks of at most MaxChunkLen
	// datums and MaxChunkNumbers numbers.
	ModeJSON Mode = iota
	// ModeProto is SDK v0.25.0's: forward and forward_backward both sent to
	// forward_backward as a protobuf ForwardBackwardRequest (forward_only
	// set for a forward), polls for their results and for samples sent with
	// Accept: application/x-protobuf, chunks bounded by the server's
	// client/config.
	ModeProto
)

func (m Mode) String() string {
	if m == ModeProto {
		return "protobuf"
	}
	return "json"
}

// fetchConfig posts client/config, with the usual retries. ok is false
// when the server does not know the call (404): an older server, to be
// spoken to in JSON. Keys the answer leaves out take the SDK's defaults.
func (c *Client) fetchConfig(ctx context.Context) (cfg wire.ClientConfigResponse, ok bool, err error) {
	b, err := c.postJSON(ctx, "/api/v1/client/config", wire.ClientConfigRequest{SDKVersion: ProtoSDKVersion}, nil)
	var se *StatusError
	if errors.As(err, &se) && se.Status == http.StatusNotFound {
		return wire.ClientConfigResponse{}, false, nil
	}
	if err != nil {
		return wire.ClientConfigResponse{}, false, err
	}
	cfg = wire.DefaultClientConfig()
	if err := json.Unmarshal(b, &cfg); err != nil {
		return wire.ClientConfigResponse{}, false, fmt.Errorf("answer %.200q: %w", b, err)
	}
	return cfg, true, nil
}

// Mode returns the protocol this client speaks, decided in New: ModeProto
// toward a server that answered client/config, ModeJSON toward one that
// does not know it (404) or when Options.ForceJSON is set.
func (c *Client) Mode() Mode { return c.mode }

// ServerConfig returns the server's answer to client/config, and false
// when it was not asked or did not answer (ModeJSON).
func (c *Client) ServerConfig() (wire.ClientConfigResponse, bool) {
	return c.config, c.mode == ModeProto
}

// chunkLimits bounds one forward/forward_backward request: at most
// maxLen datums and a cost of at most maxCost, a datum costing perNumber
// for each number it carries (tokens and loss inputs). JSON mode keeps to
// SDK v0.3.0's MaxChunkLen datums and MaxChunkNumbers numbers; protobuf
// mode to the server's fwdbwd_max_chunk_len and
// fwdbwd_max_chunk_bytes_count, estimating 10 bytes a number as the SDK
// does (estimate_bytes_count_in_model_input and its loss-input rule).
type chunkLimits struct {
	maxLen, maxCost, perNumber int
}

var jsonChunkLimits = chunkLimits{maxLen: MaxChunkLen, maxCost: MaxChunkNumbers, perNumber: 1}

// bytesPerNumber is the SDK's estimate of one number's bytes in a request.
const bytesPerNumber = 10

func protoChunkLimits(cfg wire.ClientConfigResponse) chunkLimits {
	def := wire.DefaultClientConfig()
	l := chunkLimits{maxLen: int(cfg.FwdbwdMaxChunkLen), maxCost: int(cfg.FwdbwdMaxChunkBytesCount), perNumber: bytesPerNumber}
	if l.maxLen <= 0 {
		l.maxLen = int(def.FwdbwdMaxChunkLen)
	}
	if l.maxCost <= 0 {
		l.maxCost = int(def.FwdbwdMaxChunkBytesCount)
	}
	return l
}
