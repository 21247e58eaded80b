package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/wire"
)

// WireFormat compares the two bodies a forward_backward can travel in: SDK
// v0.3's JSON and v0.25's protobuf, for one batch of RL data (best of
// several runs each, alternating, in one process).
type WireFormat struct {
	Sequences   int     `json:"sequences"`
	Tokens      int     `json:"tokens_per_sequence"`
	JSONBytes   int     `json:"json_bytes"`
	ProtoBytes  int     `json:"proto_bytes"`
	SizeRatio   float64 `json:"size_ratio"` // JSON bytes / protobuf bytes
	JSONEncMS   float64 `json:"json_encode_ms"`
	ProtoEncMS  float64 `json:"proto_encode_ms"`
	JSONDecMS   float64 `json:"json_decode_ms"`
	ProtoDecMS  float64 `json:"proto_decode_ms"`
	DecodeRatio float64 `json:"decode_ratio"` // JSON decode time / protobuf decode time
	EncodeRatio float64 `json:"encode_ratio"`
}

// rlBatch is a PPO forward_backward of n sequences of l tokens with every
// RL input: target tokens, sampler log-probs, one normalized advantage per
// sequence (as GRPO gives), 0/1 weights.
func rlBatch(n, l int) wire.ForwardBackwardRequest {
	data := make([]rl.Datum, n)
	for i := range data {
		toks := make([]int, l)
		lp, adv, w := make([]float64, l), make([]float64, l), make([]float64, l)
		for j := range toks {
			toks[j] = (i*7919 + j*104729) % 151643
			lp[j] = float64(float32(-float64((i+j)%97) / 13))
			adv[j] = float64(float32(float64(i%9-4) / 3.7))
			w[j] = float64(j % 2)
		}
		data[i] = rl.Datum{ModelInput: rl.Tokens(toks), LossFnInputs: map[string]rl.TensorData{
			rl.InputTargetTokens: rl.IntTensor(toks), rl.InputLogprobs: rl.FloatTensor(lp),
			rl.InputAdvantages: rl.FloatTensor(adv), rl.InputWeights: rl.FloatTensor(w),
		}}
	}
	seq := int64(1)
	return wire.ForwardBackwardRequest{ModelID: "run-1", SeqID: &seq,
		Input: wire.ForwardBackwardInput{Data: data, Loss: rl.Loss{Name: rl.PPO}}}
}

// measureWireFormat times encode and decode of both forms, rounds times
// each, alternating, and keeps each one's fastest run.
func measureWireFormat(n, l, rounds int, stdout io.Writer) (WireFormat, error) {
	req := rlBatch(n, l)
	jb, err := json.Marshal(req)
	if err != nil {
		return WireFormat{}, err
	}
	pb, err := req.MarshalProto()
	if err != nil {
		return WireFormat{}, err
	}
	best := func(cur *float64, f func() error) error {
		t0 := time.Now()
		if err := f(); err != nil {
			return err
		}
		if ms := float64(time.Since(t0).Microseconds()) / 1000; *cur == 0 || ms < *cur {
			*cur = ms
		}
		return nil
	}
	w := WireFormat{Sequences: n, Tokens: l, JSONBytes: len(jb), ProtoBytes: len(pb)}
	for range rounds {
		for _, step := range []struct {
			to *float64
			f  func() error
		}{
			{&w.JSONEncMS, func() error { _, err := json.Marshal(req); return err }},
			{&w.ProtoEncMS, func() error { _, err := req.MarshalProto(); return err }},
			{&w.JSONDecMS, func() error { _, err := wire.DecodeForwardBackwardRequest(jb, false); return err }},
			{&w.ProtoDecMS, func() error { _, err := wire.DecodeForwardBackwardRequestProto(pb); return err }},
		} {
			if err := best(step.to, step.f); err != nil {
				return WireFormat{}, err
			}
		}
	}
	w.SizeRatio = float64(w.JSONBytes) / float64(w.ProtoBytes)
	if w.ProtoDecMS > 0 {
		w.DecodeRatio = w.JSONDecMS / w.ProtoDecMS
	}
	if w.ProtoEncMS > 0 {
		w.EncodeRatio = w.JSONEncMS / w.ProtoEncMS
	}
	fmt.Fprintf(stdout, "forward_backward body, %d x %d tokens with all RL inputs (best of %d):\n", n, l, rounds)
	fmt.Fprintf(stdout, "  %-9s %10s %12s %12s\n", "", "bytes", "encode ms", "decode ms")
	fmt.Fprintf(stdout, "  %-9s %10d %12.2f %12.2f\n", "JSON", w.JSONBytes, w.JSONEncMS, w.JSONDecMS)
	fmt.Fprintf(stdout, "  %-9s %10d %12.2f %12.2f\n", "protobuf", w.ProtoBytes, w.ProtoEncMS, w.ProtoDecMS)
	fmt.Fprintf(stdout, "  protobuf is %.2fx smaller, %.1fx faster to decode, %.1fx faster to encode\n", w.SizeRatio, w.DecodeRatio, w.EncodeRatio)
	return w, nil
}
