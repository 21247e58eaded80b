// Package wire holds the JSON messages of the Tinker training API as the
// official Python SDK v0.3.0 (thinking-machines-lab/tinker, commit 604e00c)
// sends and receives them, with validating decoders and conversions to and
// from tandem's rl types.
//
// The SDK serializes requests with pydantic's exclude_unset: fields left at
// their defaults are absent, discriminators such as "type":"encoded_text"
// included. Every Decode function therefore applies the SDK's defaults to
// what is missing (SamplingParams temperature 1, top_k -1, top_p 1;
// AdamParams lr 1e-4, beta1 0.9, beta2 0.95, eps 1e-12; LoraConfig rank 32
// with every part trained; num_samples 1), ignores unknown fields, and
// returns a *FieldError (matching ErrBadRequest) that names the offending
// field with its path, e.g. "forward_backward_input.data[0].loss_fn_inputs.weights".
//
// Decoders are safe on any input: they bound nesting depth and never
// panic (fuzz tests check this); they hold the whole document in memory,
// so callers bound the body size. Decoded values own their slices. JSON is
// read by a small parser of this package that accepts exactly what
// encoding/json accepts (a differential fuzz test checks it) but keeps
// lists of numbers as their literals, so a training batch's tensors cost
// one allocation per list rather than one per number.
//
// Encoding uses encoding/json on the exported types, which write the
// exclude_unset form: optional fields that are unset are left out, except
// where absence would change the meaning (SamplingParams always carries
// temperature, since the wire default is 1 and tandem's is 0).
package wire
