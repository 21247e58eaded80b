package wire

import (
	"encoding/binary"
	"math"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tandemrl/tandem/rl"
)

var (
	pbSampleFields   = []string{1: "sequences", 2: "prompt_logprobs", 3: "topk_prompt_logprobs", 4: "prompt_cache_hit_tokens"}
	pbSequenceFields = []string{1: "stop_reason", 2: "tokens", 3: "logprobs"}
)

// MarshalProto returns r as a protobuf tinker_public.SampleResponse (see AppendProto).
func (r SampleResponse) MarshalProto() ([]byte, error) { return r.AppendProto(nil) }

// AppendProto appends r as a protobuf tinker_public.SampleResponse, the
// form SDK v0.25 asks for with Accept: application/x-protobuf: tokens as
// int32, log-probs as float32 (rounded), a null prompt log-prob as NaN.
// Empty logprobs and prompt_logprobs are left out (the SDK reads empty as
// None). PolicyVersion and Type have no field in the message and are not
// written; prompt_cache_hit_tokens is never set.
// It fails, naming the field, on an unknown stop reason or a token id
// outside int32.
func (r SampleResponse) AppendProto(dst []byte) ([]byte, error) {
	n := 0 // an upper bound of the size, for one allocation
	for _, s := range r.Sequences {
		n += sizeMessage(1, sizeVarintField(1, 1)+sizeTokens(2, s.Tokens)+sizeMessage(3, 4*len(s.Logprobs)))
	}
	if len(r.PromptLogprobs) > 0 {
		n += sizeMessage(2, 4*len(r.PromptLogprobs))
	}
	if r.TopKPromptLogprobs != nil {
		n += sizeMessage(3, sizeTopKProto(r.TopKPromptLogprobs))
	}
	start := len(dst)
	dst = slices.Grow(dst, n)
	var err error
	for i, s := range r.Sequences {
		p := index("sequences", i)
		var reason uint64
		switch s.StopReason {
		case rl.StopStop:
			reason = pbStopStop
		case rl.StopLength:
			reason = pbStopLength
		default:
			return dst[:start], fieldErr(p+".stop_reason", "got %q, want \"length\" or \"stop\"", s.StopReason)
		}
		size := sizeVarintField(1, reason) + sizeTokens(2, s.Tokens)
		if len(s.Logprobs) > 0 {
			size += sizeMessage(3, 4*len(s.Logprobs))
		}
		dst = appendMessageHeader(dst, 1, size)
		dst = appendVarintField(dst, 1, reason)
		if dst, err = appendTokens(dst, 2, p+".tokens", s.Tokens); err != nil {
			return dst[:start], err
		}
		if len(s.Logprobs) > 0 {
			dst = appendMessageHeader(dst, 3, 4*len(s.Logprobs))
			for _, f := range s.Logprobs {
				dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f)))
			}
		}
	}
	if len(r.PromptLogprobs) > 0 {
		dst = appendMessageHeader(dst, 2, 4*len(r.PromptLogprobs))
		for _, f := range r.PromptLogprobs {
			v := float32(math.NaN())
			if f != nil {
				v = float32(*f)
			}
			dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
		}
	}
	if r.TopKPromptLogprobs != nil {
		dst = appendMessageHeader(dst, 3, sizeTopKProto(r.TopKPromptLogprobs))
		if dst, err = appendTopKProto(dst, "topk_prompt_logprobs", r.TopKPromptLogprobs); err != nil {
			return dst[:start], err
		}
	}
	return dst, nil
}

// DecodeSampleResponseProto decodes a protobuf tinker_public.SampleResponse
// as DecodeSampleResponse decodes the JSON one: a NaN prompt log-prob is
// null, empty logprobs are absent (nil), a top-k row of masked cells is
// null. prompt_cache_hit_tokens has no field in SampleResponse and is
// skipped (its wire type is still checked). Type is "sample"; PolicyVersion is nil.
func DecodeSampleResponseProto(b []byte) (SampleResponse, error) {
	r := SampleResponse{Type: "sample"}
	var prompt []byte
	m := pbMsg{names: pbSampleFields, b: b}
	for f, err := range m.fields() {
		if err != nil {
			return r, err
		}
		switch f.num {
		case 1:
			if err := m.want(f, protowire.BytesType); err != nil {
				return r, err
			}
			s, err := decodeSequenceProto(index("sequences", len(r.Sequences)), f.b)
			if err != nil {
				return r, err
			}
			r.Sequences = append(r.Sequences, s)
		case 2:
			if err := m.want(f, protowire.BytesType); err != nil {
				return r, err
			}
			prompt = f.b
		case 3:
			if err := m.want(f, protowire.BytesType); err != nil {
				return r, err
			}
			if r.TopKPromptLogprobs, err = decodeTopKProto("topk_prompt_logprobs", f.b); err != nil {
				return r, err
			}
		case 4:
			if err := m.want(f, protowire.VarintType); err != nil {
				return r, err
			}
		}
	}
	if len(prompt) > 0 {
		if len(prompt)%4 != 0 {
			return r, fieldErr("prompt_logprobs", "%d bytes is not a whole number of 4-byte float32 values", len(prompt))
		}
		vals := make([]float64, len(prompt)/4)
		float32s(prompt, vals)
		r.PromptLogprobs = make([]*float64, len(vals))
		for i := range vals {
			if math.IsInf(vals[i], 0) {
				return r, fieldErr(index("prompt_logprobs", i), "%v; want a finite number or NaN (null)", vals[i])
			}
			if !math.IsNaN(vals[i]) {
				r.PromptLogprobs[i] = &vals[i]
			}
		}
	}
	return r, nil
}

func decodeSequenceProto(path string, b []byte) (SampledSequence, error) {
	var (
		s        SampledSequence
		reason   uint64
		tokens   []byte
		logprobs []byte
	)
	m := pbMsg{path: path, names: pbSequenceFields, b: b}
	for f, err := range m.fields() {
		if err != nil {
			return s, err
		}
		switch f.num {
		case 1:
			if err := m.want(f, protowire.VarintType); err != nil {
				return s, err
			}
			reason = uint64(uint32(f.v)) // an enum is an int32
		case 2, 3:
			if err := m.want(f, protowire.BytesType); err != nil {
				return s, err
			}
			if f.num == 2 {
				tokens = f.b
			} else {
				logprobs = f.b
			}
		}
	}
	switch reason {
	case pbStopStop:
		s.StopReason = rl.StopStop
	case pbStopLength:
		s.StopReason = rl.StopLength
	default:
		return s, fieldErr(join(path, "stop_reason"), "enum value %d unknown; want STOP_REASON_STOP (0) or STOP_REASON_LENGTH (1)", int32(reason))
	}
	var err error
	if s.Tokens, err = decodeTokens(join(path, "tokens"), tokens); err != nil {
		return s, err
	}
	if len(logprobs) > 0 {
		if len(logprobs)%4 != 0 {
			return s, fieldErr(join(path, "logprobs"), "%d bytes is not a whole number of 4-byte float32 values", len(logprobs))
		}
		s.Logprobs = make([]float64, len(logprobs)/4)
		float32s(logprobs, s.Logprobs)
		for i, f := range s.Logprobs {
			if math.IsNaN(f) || math.IsInf(f, 0) {
				return s, fieldErr(index(join(path, "logprobs"), i), "%v; want a finite number", f)
			}
		}
	}
	return s, nil
}
