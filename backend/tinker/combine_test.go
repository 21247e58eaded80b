package tinker

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/wire"
)

func outputs(n int, metrics map[string]float64) wire.ForwardBackwardOutput {
	o := wire.ForwardBackwardOutput{Metrics: metrics}
	for i := range n {
		o.LossFnOutputs = append(o.LossFnOutputs, map[string]rl.TensorData{"logprobs": rl.FloatTensor([]float64{float64(i)})})
	}
	return o
}

func TestCombineChunks(t *testing.T) {
	t.Parallel()
	a := outputs(1, map[string]float64{"loss:sum": 1, "acc:mean": 1, "lo:min": 2, "hi:max": 2, "odd:hash": 7})
	b := outputs(3, map[string]float64{"loss:sum": 3, "acc:mean": 0, "lo:min": 1, "hi:max": 5, "odd:hash": 9})
	got := combine([]wire.ForwardBackwardOutput{a, b})
	assert.Len(t, got.LossFnOutputs, 4)
	// Reference: the metrics of one pass over all four data.
	assert.InDelta(t, 4.0, got.Metrics["loss:sum"], 1e-12)
	assert.InDelta(t, (1*1.0+3*0.0)/4, got.Metrics["acc:mean"], 1e-12, "mean weighted by outputs per chunk")
	assert.Equal(t, 1.0, got.Metrics["lo:min"])
	assert.Equal(t, 5.0, got.Metrics["hi:max"])
	assert.Equal(t, 7.0, got.Metrics["odd:hash"], "unknown reductions keep the first chunk's value")
}

func TestChunks(t *testing.T) {
	t.Parallel()
	small := rl.Datum{ModelInput: rl.Tokens([]int{1}), LossFnInputs: map[string]rl.TensorData{"target_tokens": rl.IntTensor([]int{2})}}
	data := make([]rl.Datum, 2*MaxChunkLen+1)
	for i := range data {
		data[i] = small
	}
	assert.Equal(t, []int{MaxChunkLen, MaxChunkLen, 1}, lens(chunks(data, jsonChunkLimits)))
	big := rl.Datum{ModelInput: rl.Tokens(make([]int, 200_000)), LossFnInputs: map[string]rl.TensorData{"target_tokens": rl.IntTensor(make([]int, 200_000))}}
	assert.Equal(t, []int{1, 1, 1}, lens(chunks([]rl.Datum{big, big, big}, jsonChunkLimits)), "400,000 numbers each: one per request")
	assert.Equal(t, []int{0}, lens(chunks(nil, jsonChunkLimits)), "an empty batch is still one call")
}

// TestProtoChunks: in protobuf mode the server's client/config bounds a
// chunk, in datums and in bytes estimated at 10 a number.
func TestProtoChunks(t *testing.T) {
	t.Parallel()
	small := rl.Datum{ModelInput: rl.Tokens([]int{1}), LossFnInputs: map[string]rl.TensorData{"target_tokens": rl.IntTensor([]int{2})}}
	data := make([]rl.Datum, 2*MaxChunkLen+1)
	for i := range data {
		data[i] = small
	}
	def := protoChunkLimits(wire.ClientConfigResponse{})
	assert.Equal(t, chunkLimits{maxLen: 1024, maxCost: 5_000_000, perNumber: 10}, def, "zero fields take the SDK's defaults")
	assert.Equal(t, []int{len(data)}, lens(chunks(data, def)), "1024 datums fit one request")

	byLen := protoChunkLimits(wire.ClientConfigResponse{FwdbwdMaxChunkLen: 100})
	assert.Equal(t, []int{100, 100, len(data) - 200}, lens(chunks(data, byLen)), "fwdbwd_max_chunk_len")
	lim := protoChunkLimits(wire.ClientConfigResponse{FwdbwdMaxChunkLen: 100, FwdbwdMaxChunkBytesCount: 1_000})
	// Each datum is 3 numbers (one token, two targets): 30 bytes; 1,000 bytes hold 33.
	three := rl.Datum{ModelInput: rl.Tokens([]int{1}), LossFnInputs: map[string]rl.TensorData{"target_tokens": rl.IntTensor([]int{2, 3})}}
	per := 1_000 / (3 * bytesPerNumber)
	assert.Equal(t, []int{per, per, 4}, lens(chunks(slices.Repeat([]rl.Datum{three}, 2*per+4), lim)), "fwdbwd_max_chunk_bytes_count")
}

func lens(cs [][]rl.Datum) []int {
	out := make([]int, len(cs))
	for i, c := range cs {
		out[i] = len(c)
	}
	return out
}
