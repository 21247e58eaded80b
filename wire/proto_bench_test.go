package wire

import (
	"encoding/json"
	"testing"

	"github.com/tandemrl/tandem/rl"
)

// rlBatch returns a PPO forward_backward of n sequences of l tokens with
// every RL input: target_tokens, logprobs, advantages and weights.
func rlBatch(n, l int) ForwardBackwardRequest {
	data := make([]rl.Datum, n)
	for i := range data {
		toks := make([]int, l)
		lp, adv, w := make([]float64, l), make([]float64, l), make([]float64, l)
		for j := range toks {
			toks[j] = (i*7919 + j*104729) % 151643
			lp[j] = float64(float32(-float64((i+j)%97) / 13))
			adv[j] = float64(float32(float64(i%9-4) / 3.7)) // GRPO: one normalized advantage per sequence
			w[j] = float64(j % 2)
		}
		data[i] = rl.Datum{ModelInput: rl.Tokens(toks), LossFnInputs: map[string]rl.TensorData{
			rl.InputTargetTokens: rl.IntTensor(toks), rl.InputLogprobs: rl.FloatTensor(lp),
			rl.InputAdvantages: rl.FloatTensor(adv), rl.InputWeights: rl.FloatTensor(w),
		}}
	}
	seq := int64(1)
	return ForwardBackwardRequest{ModelID: "run-1", SeqID: &seq, Input: ForwardBackwardInput{Data: data, Loss: rl.Loss{Name: rl.PPO}}}
}

// BenchmarkForwardBackwardWire compares the JSON and protobuf forms of a
// forward_backward of 64 × 512 tokens with all RL inputs: encode and decode
// time, and bytes on the wire ("wire-B" of each sub-benchmark).
func BenchmarkForwardBackwardWire(b *testing.B) {
	req := rlBatch(64, 512)
	jsonBody, err := json.Marshal(req)
	if err != nil {
		b.Fatal(err)
	}
	protoBody, err := req.MarshalProto()
	if err != nil {
		b.Fatal(err)
	}
	run := func(name string, body []byte, f func() error) {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if err := f(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(body)), "wire-B")
		})
	}
	run("json/encode", jsonBody, func() error { _, err := json.Marshal(req); return err })
	run("proto/encode", protoBody, func() error { _, err := req.MarshalProto(); return err })
	run("json/decode", jsonBody, func() error { _, err := DecodeForwardBackwardRequest(jsonBody, false); return err })
	run("proto/decode", protoBody, func() error { _, err := DecodeForwardBackwardRequestProto(protoBody); return err })
}
