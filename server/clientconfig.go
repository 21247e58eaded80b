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
	return wire.ClientConfigResponse{
		CredentialDefaultSource:             "api_key",
		SampleDispatchBytesSemaphoreSize:    10 << 20,
		InflightResponseBytesSemaphoreSize:  50 << 20,
		ParallelFwdbwdChunks:                true,
		FwdbwdMaxChunkLen:                   1024,
		FwdbwdMaxChunkBytesCount:            min(5_000_000, s.cfg.MaxBodyBytes/2), // the SDK's default, within MaxBodyBytes
		FwdbwdDispatchBytesSemaphoreSize:    50_000_000,
		BillingExceptionMaxPauseDurationSec: 3600,
		SampleEnableStuckDetection:          true,
		SampleMaxConcurrentRequests:         int64(s.cfg.MaxInFlight),
	}, nil
}
