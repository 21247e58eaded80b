package server

import (
	"context"

	"github.com/tandemrl/tandem/wire"
)

// clientConfig answers the SDK's first call (SDK ≥ 0.18): the features it
// may use here — the key itself as credential (no JWT exchange), no zstd,
// the plain HTTP transport, models made by create_model — and chunk
// limits that fit this server's request bounds.
func (s *Server) clientConfig(_ context.Context, _ string, body []byte) (any, error) {
	if _, err := wire.DecodeClientConfigRequest(body); err != nil {
		return nil, badRequest(err)
	}
	cfg := wire.DefaultClientConfig()
	cfg.UsePyqwestTransport = false // the plain HTTP transport
	cfg.FwdbwdMaxChunkBytesCount = min(cfg.FwdbwdMaxChunkBytesCount, s.cfg.MaxBodyBytes/2)
	cfg.SampleMaxConcurrentRequests = int64(s.cfg.MaxInFlight)
	return cfg, nil
}
