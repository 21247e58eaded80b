package wire

// ClientConfigRequest is POST /api/v1/client/config, the first call of
// every Tinker SDK since 0.18.0 (a 404 stops the SDK before it does
// anything else).
type ClientConfigRequest struct {
	SDKVersion string `json:"sdk_version"`
}

// DecodeClientConfigRequest decodes and checks a client/config body.
func DecodeClientConfigRequest(b []byte) (ClientConfigRequest, error) {
	var r ClientConfigRequest
	o, err := parseObject(b)
	if err != nil {
		return r, err
	}
	r.SDKVersion, err = o.str("sdk_version", false)
	return r, err
}

// ClientConfigResponse tells the SDK which of its features to use and how
// to chunk its calls (the SDK v0.25.0's ClientConfigResponse; it ignores
// keys it does not know and defaults the ones missing). A server sets every
// field, so that an SDK whose defaults change keeps to what the server
// offers.
type ClientConfigResponse struct {
	// PJWTAuthEnabled makes the SDK exchange its key for a JWT at
	// /api/v1/auth/token first.
	PJWTAuthEnabled bool `json:"pjwt_auth_enabled"`
	// CredentialDefaultSource is where the SDK takes its credential from
	// ("api_key": the key itself).
	CredentialDefaultSource string `json:"credential_default_source"`
	// SampleDispatchBytesSemaphoreSize and InflightResponseBytesSemaphoreSize
	// bound the bytes of sample requests in dispatch and of responses in
	// flight, client-side.
	SampleDispatchBytesSemaphoreSize   int64 `json:"sample_dispatch_bytes_semaphore_size"`
	InflightResponseBytesSemaphoreSize int64 `json:"inflight_response_bytes_semaphore_size"`
	// ParallelFwdbwdChunks lets the SDK send the chunks of one
	// forward_backward concurrently (their seq_ids keep the order).
	ParallelFwdbwdChunks bool `json:"parallel_fwdbwd_chunks"`
	// ProtoCompressFwdbwd makes the SDK zstd-compress protobuf
	// forward_backward bodies.
	ProtoCompressFwdbwd bool `json:"proto_compress_fwdbwd"`
	// FwdbwdMaxChunkLen and FwdbwdMaxChunkBytesCount bound one
	// forward_backward request: data items, and bytes of its numbers.
	FwdbwdMaxChunkLen        int64 `json:"fwdbwd_max_chunk_len"`
	FwdbwdMaxChunkBytesCount int64 `json:"fwdbwd_max_chunk_bytes_count"`
	// FwdbwdDispatchBytesSemaphoreSize bounds forward_backward bytes in
	// dispatch, client-side.
	FwdbwdDispatchBytesSemaphoreSize int64 `json:"fwdbwd_dispatch_bytes_semaphore_size"`
	// BillingExceptionMaxPauseDurationSec is how long the SDK pauses on a
	// 402 before it gives up.
	BillingExceptionMaxPauseDurationSec int64 `json:"billing_exception_max_pause_duration_sec"`
	// SampleNoRetries turns off the SDK's retries of sample calls.
	SampleNoRetries bool `json:"sample_no_retries"`
	// SampleEnableStuckDetection lets the SDK warn about sample calls that
	// make no progress.
	SampleEnableStuckDetection bool `json:"sample_enable_stuck_detection"`
	// SampleMaxConcurrentRequests bounds the SDK's concurrent sample calls.
	SampleMaxConcurrentRequests int64 `json:"sample_max_concurrent_requests"`
	// UsePyqwestTransport picks the SDK's Rust HTTP transport instead of
	// httpx.
	UsePyqwestTransport bool `json:"use_pyqwest_transport"`
	// CreateModelViaLoadWeights makes the SDK create models with a
	// load_weights call.
	CreateModelViaLoadWeights bool `json:"create_model_via_load_weights"`
}

// DefaultClientConfig is the SDK v0.25.0's ClientConfigResponse defaults:
// what an SDK assumes for the keys a server leaves out.
func DefaultClientConfig() ClientConfigResponse {
	return ClientConfigResponse{
		CredentialDefaultSource:             "api_key",
		SampleDispatchBytesSemaphoreSize:    10 << 20,
		InflightResponseBytesSemaphoreSize:  50 << 20,
		ParallelFwdbwdChunks:                true,
		FwdbwdMaxChunkLen:                   1024,
		FwdbwdMaxChunkBytesCount:            5_000_000,
		FwdbwdDispatchBytesSemaphoreSize:    50_000_000,
		BillingExceptionMaxPauseDurationSec: 3600,
		SampleEnableStuckDetection:          true,
		SampleMaxConcurrentRequests:         2000,
		UsePyqwestTransport:                 true,
	}
}
