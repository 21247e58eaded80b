package wire

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tandemrl/tandem/rl"
)

// f32 returns a float32-representable value, so that round trips are exact.
func f32(r *rand.Rand) float64 { return float64(float32(r.NormFloat64())) }

func randTokens(r *rand.Rand, n int) []int {
	t := make([]int, n)
	for i := range t {
		t[i] = r.IntN(math.MaxInt32)
	}
	return t
}

func randFloats(r *rand.Rand, n int) []float64 {
	f := make([]float64, n)
	for i := range f {
		f[i] = f32(r)
	}
	return f
}

// randRequest returns a request in the normal form the decoder produces.
func randRequest(r *rand.Rand) ForwardBackwardRequest {
	loss := LossNames[r.IntN(len(LossNames))]
	req := ForwardBackwardRequest{ModelID: "model-" + string(rune('a'+r.IntN(26))), Forward: r.IntN(2) == 0}
	if r.IntN(3) > 0 {
		seq := int64(1 + r.IntN(math.MaxInt32))
		req.SeqID = &seq
	}
	req.Input.Loss.Name = loss
	if r.IntN(2) == 0 {
		req.Input.Loss.Config = map[string]float64{rl.ClipLowThreshold: f32(r), rl.ClipHighThreshold: f32(r), rl.DROBeta: 0}
	}
	req.Input.Data = make([]rl.Datum, r.IntN(4))
	for i := range req.Input.Data {
		var chunks []rl.Chunk
		n := 0
		for range 1 + r.IntN(3) {
			toks := randTokens(r, r.IntN(6))
			n += len(toks)
			chunks = append(chunks, rl.Chunk{Type: rl.ChunkEncodedText, Tokens: toks})
		}
		in := map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor(randTokens(r, n))}
		for _, k := range []string{rl.InputLogprobs, rl.InputAdvantages, rl.InputWeights} {
			in[k] = rl.FloatTensor(randFloats(r, n))
		}
		if n%2 == 0 && n > 0 {
			w := in[rl.InputWeights]
			w.Shape = []int{n / 2, 2}
			in[rl.InputWeights] = w
		}
		req.Input.Data[i] = rl.Datum{ModelInput: rl.ModelInput{Chunks: chunks}, LossFnInputs: in}
	}
	return req
}

func TestProtoRequestRoundTrip(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 14))
	for range 300 {
		want := randRequest(r)
		b, err := want.MarshalProto()
		require.NoError(t, err)
		got, err := DecodeForwardBackwardRequestProto(b)
		require.NoError(t, err)
		require.Equal(t, want, got)

		// The JSON form of the same request decodes to the same value.
		j, err := json.Marshal(want)
		require.NoError(t, err)
		fromJSON, err := DecodeForwardBackwardRequest(j, want.Forward)
		require.NoError(t, err)
		require.Equal(t, want, fromJSON)

		// Appending keeps what dst held.
		out, err := want.AppendProto([]byte("prefix"))
		require.NoError(t, err)
		require.Equal(t, append([]byte("prefix"), b...), out)
	}
}

func randSample(r *rand.Rand) SampleResponse {
	s := SampleResponse{Type: "sample"}
	for range r.IntN(4) {
		q := SampledSequence{StopReason: rl.StopStop, Tokens: randTokens(r, r.IntN(6))}
		if r.IntN(2) == 0 {
			q.StopReason = rl.StopLength
		}
		if len(q.Tokens) > 0 && r.IntN(3) > 0 {
			q.Logprobs = randFloats(r, len(q.Tokens))
		}
		s.Sequences = append(s.Sequences, q)
	}
	if n := r.IntN(5); n > 0 {
		s.PromptLogprobs = make([]*float64, n)
		for i := 1; i < n; i++ {
			v := f32(r)
			s.PromptLogprobs[i] = &v
		}
	}
	return s
}

func TestProtoSampleRoundTrip(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(2, 14))
	for range 300 {
		want := randSample(r)
		b, err := want.MarshalProto()
		require.NoError(t, err)
		got, err := DecodeSampleResponseProto(b)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	// PolicyVersion has no field in the message; empty logprobs read as absent.
	v := int64(3)
	got, err := DecodeSampleResponseProto(mustProto(t, SampleResponse{PolicyVersion: &v, Sequences: []SampledSequence{{StopReason: rl.StopStop, Tokens: []int{1}, Logprobs: []float64{}}}}))
	require.NoError(t, err)
	assert.Equal(t, SampleResponse{Type: "sample", Sequences: []SampledSequence{{StopReason: rl.StopStop, Tokens: []int{1}}}}, got)
}

func mustProto(t *testing.T, m interface{ MarshalProto() ([]byte, error) }) []byte {
	t.Helper()
	b, err := m.MarshalProto()
	require.NoError(t, err)
	return b
}

func randOutput(r *rand.Rand) ForwardBackwardOutput {
	w := ForwardBackwardOutput{LossFnOutputType: LossFnOutputType, LossFnOutputs: []map[string]rl.TensorData{}, Metrics: map[string]float64{}}
	for range r.IntN(3) {
		w.Metrics["m"+string(rune('a'+r.IntN(26)))] = f32(r)
	}
	k := 1 + r.IntN(2) // trailing size of "topk", changed now and then to start a new record
	for range r.IntN(6) {
		if r.IntN(3) == 0 {
			k = 1 + r.IntN(2)
		}
		n := r.IntN(5)
		ids := rl.IntTensor(randTokens(r, n*k))
		ids.Shape = []int{n, k}
		w.LossFnOutputs = append(w.LossFnOutputs, map[string]rl.TensorData{
			"logprobs": rl.FloatTensor(randFloats(r, n)),
			"topk":     ids,
		})
	}
	return w
}

func TestProtoOutputRoundTrip(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 14))
	for range 300 {
		want := randOutput(r)
		b, err := want.MarshalProto()
		require.NoError(t, err)
		got, err := DecodeForwardBackwardOutputProto(b)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
}

func TestProtoOutputRecords(t *testing.T) {
	t.Parallel()
	mk := func(k int) map[string]rl.TensorData {
		td := rl.IntTensor(make([]int, 2*k))
		td.Shape = []int{2, k}
		return map[string]rl.TensorData{"x": td}
	}
	w := ForwardBackwardOutput{LossFnOutputs: []map[string]rl.TensorData{mk(1), mk(1), mk(2), mk(1)}}
	recs, err := outputRecords(w, []string{"x"})
	require.NoError(t, err)
	assert.Equal(t, []pbRecord{{0, 2}, {2, 3}, {3, 4}}, recs)

	w.LossFnOutputs[2] = map[string]rl.TensorData{"y": rl.FloatTensor([]float64{1})}
	_, err = w.MarshalProto()
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "loss_fn_outputs[2]", fe.Field)

	// A record without fields carries its datums in num_datums alone.
	w = ForwardBackwardOutput{LossFnOutputs: []map[string]rl.TensorData{{}, {}, {}}, Metrics: map[string]float64{}}
	got, err := DecodeForwardBackwardOutputProto(mustProto(t, w))
	require.NoError(t, err)
	assert.Equal(t, w, got)
}

func TestProtoEncodeErrors(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	seq := int64(math.MaxInt32 + 1)
	ok := rl.Datum{ModelInput: rl.Tokens([]int{1}), LossFnInputs: map[string]rl.TensorData{rl.InputTargetTokens: rl.IntTensor([]int{1})}}
	req := func(f func(*ForwardBackwardRequest)) ForwardBackwardRequest {
		r := ForwardBackwardRequest{ModelID: "m", Input: ForwardBackwardInput{Loss: rl.Loss{Name: rl.CrossEntropy}, Data: []rl.Datum{ok}}}
		f(&r)
		return r
	}
	for field, m := range map[string]interface{ MarshalProto() ([]byte, error) }{
		"seq_id": req(func(r *ForwardBackwardRequest) { r.SeqID = &seq }),
		"data[0].model_input[0].encoded_text.tokens[0]": req(func(r *ForwardBackwardRequest) {
			r.Input.Data = []rl.Datum{{ModelInput: rl.Tokens([]int{-1})}}
		}),
		"data[0].model_input[0]": req(func(r *ForwardBackwardRequest) {
			r.Input.Data = []rl.Datum{{ModelInput: rl.ModelInput{Chunks: []rl.Chunk{{Type: "image"}}}}}
		}),
		"data[0].loss_fn_inputs.weights.dense[0]": req(func(r *ForwardBackwardRequest) {
			r.Input.Data = []rl.Datum{{LossFnInputs: map[string]rl.TensorData{"weights": rl.FloatTensor([]float64{nan})}}}
		}),
		"data[0].loss_fn_inputs.weights.shape": req(func(r *ForwardBackwardRequest) {
			r.Input.Data = []rl.Datum{{LossFnInputs: map[string]rl.TensorData{"weights": {DType: rl.Float32, Floats: []float64{1}, Shape: []int{2}}}}}
		}),
		"data[0].loss_fn_inputs.weights.dtype": req(func(r *ForwardBackwardRequest) {
			r.Input.Data = []rl.Datum{{LossFnInputs: map[string]rl.TensorData{"weights": {DType: "bfloat16"}}}}
		}),
		"loss_fn_config.beta":      req(func(r *ForwardBackwardRequest) { r.Input.Loss.Config = map[string]float64{"beta": math.Inf(1)} }),
		"sequences[0].stop_reason": SampleResponse{Sequences: []SampledSequence{{StopReason: "eos"}}},
		"sequences[0].tokens[1]":   SampleResponse{Sequences: []SampledSequence{{StopReason: rl.StopStop, Tokens: []int{1, math.MaxInt32 + 1}}}},
		"metrics.loss":             ForwardBackwardOutput{Metrics: map[string]float64{"loss": nan}},
	} {
		_, err := m.MarshalProto()
		var fe *FieldError
		require.ErrorAs(t, err, &fe, field)
		assert.Equal(t, field, fe.Field)
	}
}

// Builders of hand-made messages.
func tag(b []byte, num protowire.Number, typ protowire.Type) []byte {
	return protowire.AppendTag(b, num, typ)
}
func bytesField(b []byte, num protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(tag(b, num, protowire.BytesType), v)
}
func varintField(b []byte, num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(tag(b, num, protowire.VarintType), v)
}
func le32(v ...int32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, uint32(x))
	}
	return b
}
func le64(v ...int64) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, uint64(x))
	}
	return b
}

// chunk returns a Datum's model_input field: a Chunk holding an
// EncodedTextChunk of toks.
func chunk(toks ...int32) []byte {
	return bytesField(nil, 1, bytesField(nil, 1, bytesField(nil, 1, le32(toks...))))
}

// tensor returns a Tensor.
func tensor(dtype uint64, dense []byte, shape ...int64) []byte {
	b := bytesField(nil, 1, dense)
	b = varintField(b, 3, dtype)
	for _, d := range shape { // unpacked, which decoders must accept too
		b = varintField(b, 4, uint64(d))
	}
	return b
}

func entry(key string, value []byte) []byte {
	return bytesField(bytesField(nil, 1, []byte(key)), 2, value)
}

// request returns a ForwardBackwardRequest with one datum of chunk(1, 2)
// and target_tokens t, plus extra fields.
func request(t []byte, extra ...byte) []byte {
	b := bytesField(nil, 1, []byte("m"))
	datum := append(chunk(1, 2), bytesField(nil, 2, entry("target_tokens", t))...)
	b = bytesField(b, 3, datum)
	b = bytesField(b, 4, []byte("cross_entropy"))
	return append(b, extra...)
}

func TestProtoDecodeRequestErrors(t *testing.T) {
	t.Parallel()
	good := tensor(2, le64(2, 3))
	require.NoError(t, func() error { _, err := DecodeForwardBackwardRequestProto(request(good)); return err }())
	for name, c := range map[string]struct {
		b     []byte
		field string
	}{
		"truncated tag":          {[]byte{0x80}, "body"},
		"field number 0":         {[]byte{0x00, 0x01}, "body"},
		"truncated varint":       {request(good, 0x10, 0xff), "seq_id"},
		"varint overflow":        {request(good, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), "seq_id"},
		"length past end":        {request(good, 0x1a, 0x7f, 0x00), "data"},
		"huge length":            {request(good, 0x1a, 0xff, 0xff, 0xff, 0xff, 0x0f), "data"},
		"wrong wire type":        {request(good, 0x12, 0x00), "seq_id"},
		"stray end group":        {request(good, 0x0c), "model_id"},
		"negative seq_id":        {request(good, varintField(nil, 2, uint64(math.MaxUint64))...), "seq_id"},
		"bad utf-8":              {bytesField(request(good), 1, []byte{0xff}), "model_id"},
		"no model_id":            {request(good)[3:], "model_id"},
		"unknown loss":           {bytesField(request(good), 4, []byte("dpo")), "loss_fn"},
		"no loss":                {bytesField(bytesField(nil, 1, []byte("m")), 3, chunk(1)), "loss_fn"},
		"missing input":          {bytesField(request(good), 4, []byte("ppo")), "data[0].loss_fn_inputs"},
		"length mismatch":        {request(tensor(2, le64(2))), "data[0].loss_fn_inputs.target_tokens"},
		"float targets":          {request(tensor(1, le32(1, 2))), "data[0].loss_fn_inputs.target_tokens"},
		"token out of range":     {request(tensor(2, le64(2, 1<<40))), "data[0].loss_fn_inputs.target_tokens.dense[1]"},
		"unspecified dtype":      {request(tensor(0, le64(2, 3))), "data[0].loss_fn_inputs.target_tokens.dtype"},
		"partial element":        {request(tensor(2, le64(2, 3)[:15])), "data[0].loss_fn_inputs.target_tokens.dense"},
		"shape mismatch":         {request(tensor(2, le64(2, 3), 3)), "data[0].loss_fn_inputs.target_tokens.shape"},
		"negative dimension":     {request(tensor(2, le64(2, 3), -2)), "data[0].loss_fn_inputs.target_tokens.shape[0]"},
		"overflowing shape":      {request(tensor(2, nil, 1<<31, 1<<31, 1<<31)), "data[0].loss_fn_inputs.target_tokens.shape"},
		"nan input":              {bytesField(request(good), 3, append(chunk(1), bytesField(nil, 2, entry("weights", tensor(1, le32(0x7fc00000))))...)), "data[1].loss_fn_inputs.weights"},
		"bad packed shape":       {request(bytesField(tensor(2, le64(2, 3)), 4, []byte{0x80})), "data[0].loss_fn_inputs.target_tokens.shape"},
		"negative token":         {bytesField(request(good), 3, chunk(-1)), "data[1].model_input[0].encoded_text.tokens[0]"},
		"partial token":          {bytesField(request(good), 3, bytesField(nil, 1, bytesField(nil, 1, bytesField(nil, 1, []byte{1, 2, 3})))), "data[1].model_input[0].encoded_text.tokens"},
		"empty chunk":            {bytesField(request(good), 3, bytesField(nil, 1, nil)), "data[1].model_input[0]"},
		"dmel chunk":             {bytesField(request(good), 3, bytesField(nil, 1, bytesField(nil, 3, nil))), "data[1].model_input[0].dmel"},
		"map entry wire type":    {bytesField(request(good), 3, bytesField(nil, 2, varintField(nil, 1, 3))), "data[1].loss_fn_inputs.key"},
		"non-finite config":      {bytesField(request(good), 5, protowire.AppendFixed64(tag(bytesField(nil, 1, []byte("beta")), 2, protowire.Fixed64Type), math.Float64bits(math.Inf(-1)))), "loss_fn_config.beta"},
		"config of wrong type":   {bytesField(request(good), 5, varintField(bytesField(nil, 1, []byte("beta")), 2, 1)), "loss_fn_config.value"},
		"forward_only as string": {bytesField(request(good), 6, []byte("yes")), "forward_only"},
	} {
		_, err := DecodeForwardBackwardRequestProto(c.b)
		var fe *FieldError
		if assert.ErrorAs(t, err, &fe, name) {
			assert.Equal(t, c.field, fe.Field, "%s: %v", name, err)
			assert.True(t, errors.Is(err, ErrBadRequest))
		}
	}
}

func TestProtoDecodeRequestLenient(t *testing.T) {
	t.Parallel()
	base, err := DecodeForwardBackwardRequestProto(request(tensor(2, le64(2, 3))))
	require.NoError(t, err)
	unknown := varintField(nil, 99, 5)
	unknown = protowire.AppendFixed32(tag(unknown, 98, protowire.Fixed32Type), 7)
	unknown = protowire.AppendFixed64(tag(unknown, 97, protowire.Fixed64Type), 7)
	unknown = bytesField(unknown, 96, []byte("x"))
	unknown = tag(varintField(tag(unknown, 95, protowire.StartGroupType), 1, 1), 95, protowire.EndGroupType)
	for name, b := range map[string][]byte{
		"unknown fields":    request(append(tensor(2, le64(2, 3)), unknown...), unknown...),
		"packed shape":      request(bytesField(tensor(2, le64(2, 3)), 4, []byte{2})),
		"unpacked shape":    request(tensor(2, le64(2, 3), 2)),
		"seq_id 0":          request(tensor(2, le64(2, 3)), varintField(nil, 2, 0)...),
		"repeated model_id": append(bytesField(nil, 1, []byte("x")), request(tensor(2, le64(2, 3)))...),
		"int32 targets":     request(tensor(3, le32(2, 3))),
	} {
		got, err := DecodeForwardBackwardRequestProto(b)
		require.NoError(t, err, name)
		assert.Equal(t, base, got, name)
	}
	// A repeated map key takes the last entry.
	dup := bytesField(nil, 1, []byte("m"))
	dup = bytesField(dup, 3, append(append(chunk(1, 2), bytesField(nil, 2, entry("target_tokens", tensor(2, le64(9))))...),
		bytesField(nil, 2, entry("target_tokens", tensor(2, le64(2, 3))))...))
	got, err := DecodeForwardBackwardRequestProto(bytesField(dup, 4, []byte("cross_entropy")))
	require.NoError(t, err)
	assert.Equal(t, base, got)
	// A oneof case set twice merges; a later case replaces an earlier one.
	twice := append(bytesField(nil, 1, nil), bytesField(nil, 1, bytesField(nil, 1, le32(1, 2)))...)
	replaced := append(bytesField(nil, 2, []byte{}), bytesField(nil, 1, bytesField(nil, 1, le32(1, 2)))...)
	for _, c := range [][]byte{twice, replaced} {
		b := bytesField(bytesField(nil, 1, []byte("m")), 3, append(bytesField(nil, 1, c), bytesField(nil, 2, entry("target_tokens", tensor(2, le64(2, 3))))...))
		got, err := DecodeForwardBackwardRequestProto(bytesField(b, 4, []byte("cross_entropy")))
		require.NoError(t, err)
		assert.Equal(t, base, got)
	}
}

func TestProtoDecodeResultErrors(t *testing.T) {
	t.Parallel()
	batched := func(data, offsets []byte, dtype uint64, trailing ...int64) []byte {
		b := bytesField(bytesField(nil, 1, data), 2, offsets)
		b = varintField(b, 3, dtype)
		for _, d := range trailing {
			b = varintField(b, 4, uint64(d))
		}
		return b
	}
	record := func(num uint64, bt []byte) []byte {
		return bytesField(nil, 2, varintField(bytesField(nil, 2, entry("logprobs", bt)), 3, num))
	}
	fine := record(2, batched(le32(0, 0, 0), le64(0, 4, 12), 1))
	_, err := DecodeForwardBackwardOutputProto(fine)
	require.NoError(t, err)
	for name, c := range map[string]struct {
		b     []byte
		field string
	}{
		"offsets count":       {record(3, batched(le32(0, 0, 0), le64(0, 4, 12), 1)), "loss_fn_outputs[0].fields.logprobs.offsets"},
		"offset past data":    {record(2, batched(le32(0, 0, 0), le64(0, 4, 16), 1)), "loss_fn_outputs[0].fields.logprobs.offsets[2]"},
		"offset backwards":    {record(2, batched(le32(0, 0, 0), le64(0, 8, 4), 1)), "loss_fn_outputs[0].fields.logprobs.offsets[2]"},
		"offset misaligned":   {record(2, batched(le32(0, 0, 0), le64(0, 2, 12), 1)), "loss_fn_outputs[0].fields.logprobs.offsets[1]"},
		"negative offset":     {record(2, batched(le32(0, 0, 0), le64(-4, 4, 12), 1)), "loss_fn_outputs[0].fields.logprobs.offsets[0]"},
		"ragged trailing":     {record(2, batched(le32(0, 0, 0), le64(0, 4, 12), 1, 2)), "loss_fn_outputs[0].fields.logprobs.offsets[1]"},
		"unknown dtype":       {record(2, batched(le32(0, 0, 0), le64(0, 4, 12), 9)), "loss_fn_outputs[0].fields.logprobs.dtype"},
		"nan":                 {record(1, batched(le32(0x7fc00000), le64(0, 4), 1)), "loss_fn_outputs[0].fields.logprobs.data[0]"},
		"too many datums":     {bytesField(nil, 2, varintField(nil, 3, MaxProtoDatums+1)), "loss_fn_outputs[0].num_datums"},
		"negative num_datums": {bytesField(nil, 2, varintField(nil, 3, math.MaxUint64)), "loss_fn_outputs[0].num_datums"},
		"metrics value type":  {bytesField(nil, 3, varintField(bytesField(nil, 1, []byte("x")), 2, 1)), "metrics.value"},
		"type not utf-8":      {bytesField(nil, 1, []byte{0xc0}), "loss_fn_output_type"},
	} {
		_, err := DecodeForwardBackwardOutputProto(c.b)
		var fe *FieldError
		if assert.ErrorAs(t, err, &fe, name) {
			assert.Equal(t, c.field, fe.Field, "%s: %v", name, err)
		}
	}
	// Many records of the maximum count are refused once the total passes the bound.
	var many []byte
	for range 3 {
		many = append(many, bytesField(nil, 2, varintField(nil, 3, MaxProtoDatums/2))...)
	}
	_, err = DecodeForwardBackwardOutputProto(many)
	var fe *FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "loss_fn_outputs[2].num_datums", fe.Field)

	seq := func(b []byte) []byte { return bytesField(nil, 1, b) }
	for name, c := range map[string]struct {
		b     []byte
		field string
	}{
		"stop reason":       {seq(varintField(nil, 1, 7)), "sequences[0].stop_reason"},
		"partial token":     {seq(bytesField(nil, 2, []byte{1})), "sequences[0].tokens"},
		"negative token":    {seq(bytesField(nil, 2, le32(-5))), "sequences[0].tokens[0]"},
		"nan logprob":       {seq(bytesField(nil, 3, le32(0x7fc00000))), "sequences[0].logprobs[0]"},
		"partial prompt":    {bytesField(nil, 2, []byte{1, 2}), "prompt_logprobs"},
		"infinite prompt":   {bytesField(nil, 2, le32(0x7f800000)), "prompt_logprobs[0]"},
		"topk of bad type":  {varintField(nil, 3, 1), "topk_prompt_logprobs"},
		"cache hits string": {bytesField(nil, 4, nil), "prompt_cache_hit_tokens"},
	} {
		_, err := DecodeSampleResponseProto(c.b)
		var fe *FieldError
		if assert.ErrorAs(t, err, &fe, name) {
			assert.Equal(t, c.field, fe.Field, "%s: %v", name, err)
		}
	}
}
