package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// seeds are valid and near-valid bodies every fuzz target starts from.
var seeds = []string{
	`{}`, `[]`, `null`, `{"model_id":"m","seq_id":1}`,
	`{"session_id":"s","model_seq_id":0,"base_model":"b","lora_config":{"rank":32,"seed":null}}`,
	`{"model_id":"m","forward_backward_input":{"loss_fn":"cross_entropy","data":[` + goodDatum + `]},"seq_id":1}`,
	`{"model_id":"m","forward_input":{"loss_fn":"ppo","loss_fn_config":{"clip_low_threshold":0.8},"data":[{"model_input":{"chunks":[{"tokens":[1]}]},"loss_fn_inputs":{"target_tokens":[1],"logprobs":[-1],"advantages":[1]}}]}}`,
	`{"model_id":"m","adam_params":{"learning_rate":1e-4,"beta1":0.9},"seq_id":2}`,
	`{"model_id":"m","path":"tinker://m/weights/c","optimizer":true}`,
	`{"sampling_session_id":"s","seq_id":0,"num_samples":2,"prompt":{"chunks":[{"tokens":[1,2]}]},"sampling_params":{"max_tokens":4,"stop":["\n"]}}`,
	`{"base_model":"b","prompt":{"chunks":[]},"sampling_params":{"stop":[1,2],"top_k":5}}`,
	`{"request_id":"r-1"}`, `{"type":"try_again","request_id":"r","queue_state":"active"}`,
	`{"error":"x","category":"user"}`,
	`{"sequences":[{"tokens":[1],"logprobs":[-0.5],"stop_reason":"length"}],"prompt_logprobs":[null,-1]}`,
	`{"loss_fn_output_type":"ArrayRecord","loss_fn_outputs":[{"logprobs":{"data":[-1],"dtype":"float32"}}],"metrics":{"loss:sum":1}}`,
	`{"supported_models":[{"model_name":"m","max_context_length":8}]}`,
}

// fuzzDecoder checks the decoder contract on arbitrary input: no panic; an
// error is a *FieldError matching ErrBadRequest; an accepted request
// re-encodes to JSON that decodes again.
func fuzzDecoder(f *testing.F, decode func([]byte) error) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := decode(b)
		if err == nil {
			return
		}
		var fe *FieldError
		if !errors.As(err, &fe) || !errors.Is(err, ErrBadRequest) {
			t.Fatalf("error %T %v is not a FieldError", err, err)
		}
		if fe.Field == "" || fe.Problem == "" {
			t.Fatalf("error %+v does not name a field and a problem", fe)
		}
	})
}

func FuzzForwardBackwardRequest(f *testing.F) {
	fuzzDecoder(f, func(b []byte) error {
		r, err := DecodeForwardBackwardRequest(b, false)
		if err != nil {
			return err
		}
		enc, err := json.Marshal(r)
		if err != nil {
			panic("accepted request does not encode: " + err.Error())
		}
		if _, err := DecodeForwardBackwardRequest(enc, false); err != nil {
			panic("re-encoded request does not decode: " + err.Error())
		}
		return nil
	})
}

func FuzzSampleRequest(f *testing.F) {
	fuzzDecoder(f, func(b []byte) error {
		r, err := DecodeSampleRequest(b)
		if err != nil {
			return err
		}
		enc, err := json.Marshal(r)
		if err != nil {
			panic("accepted request does not encode: " + err.Error())
		}
		if _, err := DecodeSampleRequest(enc); err != nil {
			panic("re-encoded request does not decode: " + err.Error())
		}
		return nil
	})
}

func FuzzOptimStepRequest(f *testing.F) {
	fuzzDecoder(f, func(b []byte) error {
		r, err := DecodeOptimStepRequest(b)
		if err != nil {
			return err
		}
		enc, err := json.Marshal(r)
		if err != nil {
			panic(err)
		}
		back, err := DecodeOptimStepRequest(enc)
		if err != nil || back.AdamParams != r.AdamParams {
			panic("optim_step does not round-trip")
		}
		return nil
	})
}

func FuzzCreateModelRequest(f *testing.F) {
	fuzzDecoder(f, func(b []byte) error { _, err := DecodeCreateModelRequest(b); return err })
}

// FuzzAnyDecoder runs every request and response decoder on the input; the
// first byte picks the decoder.
func FuzzAnyDecoder(f *testing.F) {
	for i, s := range seeds {
		f.Add(byte(i), []byte(s))
	}
	f.Fuzz(func(t *testing.T, pick byte, b []byte) {
		d := decoders[int(pick)%len(decoders)]
		err := d.decode(b)
		if err == nil {
			return
		}
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field == "" {
			t.Fatalf("%s: error %T %v is not a FieldError naming a field", d.name, err, err)
		}
	})
}

func FuzzTinkerPath(f *testing.F) {
	for _, s := range []string{"tinker://r/weights/n", "tinker://r/sampler_weights/n", "tinker://../weights/x", "x", "bt://loops:r/weights/n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseTinkerPath(s)
		if err != nil {
			if !errors.Is(err, ErrBadPath) {
				t.Fatalf("error %v is not ErrBadPath", err)
			}
			return
		}
		want := s // a Loops path prints as the tinker:// path it names
		if rest, ok := strings.CutPrefix(s, LoopsScheme); ok {
			want = TinkerScheme + rest
		}
		if p.String() != want {
			t.Fatalf("path %q parses to %+v which prints %q", s, p, p.String())
		}
		for _, part := range []string{p.Run, p.Name} {
			if part == "." || part == ".." || part == "" {
				t.Fatalf("path %q has a part %q that escapes a folder", s, part)
			}
		}
	})
}
