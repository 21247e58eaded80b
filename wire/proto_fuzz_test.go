package wire

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// protoDecoders are the protobuf decoders, for tests that run all of them.
var protoDecoders = []struct {
	name   string
	decode func([]byte) error
}{
	{"forward_backward_request", func(b []byte) error { _, err := DecodeForwardBackwardRequestProto(b); return err }},
	{"sample_response", func(b []byte) error { _, err := DecodeSampleResponseProto(b); return err }},
	{"forward_backward_output", func(b []byte) error { _, err := DecodeForwardBackwardOutputProto(b); return err }},
}

// fuzzProto seeds f with every fixture and checks the decoder contract: no
// panic; an error is a *FieldError naming a field and a problem; an
// accepted message re-encodes (or fails with a FieldError) and decodes
// again to the same value.
func fuzzProto[T any](f *testing.F, decode func([]byte) (T, error), encode func(T) ([]byte, error)) {
	files, _ := filepath.Glob(filepath.Join("testdata", "proto", "*.pb"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := decode(b)
		if err != nil {
			checkFieldError(t, err)
			return
		}
		enc, err := encode(v)
		if err != nil {
			checkFieldError(t, err)
			return
		}
		back, err := decode(enc)
		if err != nil {
			t.Fatalf("re-encoded message does not decode: %v", err)
		}
		if !reflect.DeepEqual(v, back) {
			t.Fatalf("round trip changed the value:\n%+v\n%+v", v, back)
		}
	})
}

func checkFieldError(t *testing.T, err error) {
	t.Helper()
	var fe *FieldError
	if !errors.As(err, &fe) || !errors.Is(err, ErrBadRequest) {
		t.Fatalf("error %T %v is not a FieldError", err, err)
	}
	if fe.Field == "" || fe.Problem == "" {
		t.Fatalf("error %+v does not name a field and a problem", fe)
	}
}

func FuzzForwardBackwardRequestProto(f *testing.F) {
	fuzzProto(f, DecodeForwardBackwardRequestProto, ForwardBackwardRequest.MarshalProto)
}

// The header a server reads from a body it refuses agrees with the full
// decode whenever that succeeds, and never panics otherwise.
func FuzzTrainingHeaderProto(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "proto", "forward*.pb"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte{0x0a, 0x01, 'm', 0x10, 0x03, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, herr := DecodeTrainingHeaderProto(b)
		r, err := DecodeForwardBackwardRequestProto(b)
		if err != nil {
			return
		}
		if herr != nil {
			t.Fatalf("a body that decodes has no header: %v", herr)
		}
		if h.ModelID != r.ModelID || !reflect.DeepEqual(h.SeqID, r.SeqID) {
			t.Fatalf("header %+v, request model %q seq %v", h, r.ModelID, r.SeqID)
		}
	})
}

func FuzzSampleResponseProto(f *testing.F) {
	fuzzProto(f, DecodeSampleResponseProto, SampleResponse.MarshalProto)
}

func FuzzForwardBackwardOutputProto(f *testing.F) {
	fuzzProto(f, DecodeForwardBackwardOutputProto, ForwardBackwardOutput.MarshalProto)
}
