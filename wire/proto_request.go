package wire

import (
	"math"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tandemrl/tandem/rl"
)

// Field names of the request messages, by field number.
var (
	pbFBRequestFields = []string{1: "model_id", 2: "seq_id", 3: "data", 4: "loss_fn", 5: "loss_fn_config", 6: "forward_only"}
	pbDatumFields     = []string{1: "model_input", 2: "loss_fn_inputs"}
	pbChunkFields     = []string{1: "encoded_text", 2: "image", 3: "dmel"}
	pbTextFields      = []string{1: "tokens"}
	pbTensorFields    = []string{1: "dense", 2: "sparse_csr", 3: "dtype", 4: "shape"}
)

// DecodeForwardBackwardRequestProto decodes a protobuf
// tinker_public.ForwardBackwardRequest, the body SDK v0.25 sends to
// POST /api/v1/forward_backward for both forward and forward_backward.
// forward_only sets Forward (the call must not touch gradients); seq_id 0
// means unset (SeqID nil). It checks what DecodeForwardBackwardRequest
// checks: a known loss whose inputs every datum carries, one element per
// model_input token in every loss input, target_tokens int64 token ids,
// finite floats. Only encoded_text chunks and dense tensors are accepted.
// Error paths are the message's field names, e.g. "data[1].model_input[0].image".
// The result owns its slices (nothing aliases b).
func DecodeForwardBackwardRequestProto(b []byte) (ForwardBackwardRequest, error) {
	var r ForwardBackwardRequest
	var (
		data      [][]byte
		lossFn    string
		lossFound bool
		config    map[string]float64
	)
	m := pbMsg{names: pbFBRequestFields, b: b}
	for f, err := range m.fields() {
		if err != nil {
			return r, err
		}
		switch f.num {
		case 1:
			if r.ModelID, err = m.str(f); err != nil {
				return r, err
			}
		case 2:
			if err := m.want(f, protowire.VarintType); err != nil {
				return r, err
			}
			seq := int64(int32(f.v))
			r.SeqID = &seq
		case 3:
			if err := m.want(f, protowire.BytesType); err != nil {
				return r, err
			}
			data = append(data, f.b)
		case 4:
			if lossFn, err = m.str(f); err != nil {
				return r, err
			}
			lossFound = true
		case 5:
			if err := m.want(f, protowire.BytesType); err != nil {
				return r, err
			}
			if config == nil {
				config = map[string]float64{}
			}
			if err := doubleMapEntry("loss_fn_config", f, config); err != nil {
				return r, err
			}
		case 6:
			if err := m.want(f, protowire.VarintType); err != nil {
				return r, err
			}
			r.Forward = f.v != 0
		}
	}
	if r.ModelID == "" {
		return r, fieldErr("model_id", "empty; want the id create_model returned")
	}
	if r.SeqID != nil && *r.SeqID == 0 {
		r.SeqID = nil // proto3 cannot tell 0 from unset; the SDK sends request_id+1
	}
	if r.SeqID != nil && *r.SeqID < 0 {
		return r, fieldErr("seq_id", "%d is negative", *r.SeqID)
	}
	if !lossFound {
		return r, fieldErr("loss_fn", "missing; want one of %v", LossNames)
	}
	need, ok := requiredInputs[rl.LossName(lossFn)]
	if !ok {
		return r, fieldErr("loss_fn", "unknown loss %q; want one of %v", lossFn, LossNames)
	}
	r.Input.Loss = rl.Loss{Name: rl.LossName(lossFn), Config: config}
	r.Input.Data = make([]rl.Datum, len(data))
	for i, db := range data {
		p := index("data", i)
		d, err := decodeDatumProto(p, db)
		if err != nil {
			return r, err
		}
		for _, k := range need {
			if _, ok := d.LossFnInputs[k]; !ok {
				return r, fieldErr(p+".loss_fn_inputs", "missing %q, which loss %q needs (it needs %v)", k, lossFn, need)
			}
		}
		r.Input.Data[i] = d
	}
	return r, nil
}

// decodeDatumProto reads a tinker_public.Datum.
func decodeDatumProto(path string, b []byte) (rl.Datum, error) {
	d := rl.Datum{LossFnInputs: map[string]rl.TensorData{}}
	var chunks [][]byte
	m := pbMsg{path: path, names: pbDatumFields, b: b}
	for f, err := range m.fields() {
		if err != nil {
			return d, err
		}
		switch f.num {
		case 1:
			if err := m.want(f, protowire.BytesType); err != nil {
				return d, err
			}
			chunks = append(chunks, f.b)
		case 2:
			if err := m.want(f, protowire.BytesType); err != nil {
				return d, err
			}
			lp := join(path, "loss_fn_inputs")
			k, v, err := mapEntry(lp, f, protowire.BytesType)
			if err != nil {
				return d, err
			}
			t, err := decodeTensorProto(join(lp, k), v.b)
			if err != nil {
				return d, err
			}
			d.LossFnInputs[k] = t
		}
	}
	d.ModelInput.Chunks = make([]rl.Chunk, len(chunks))
	for i, cb := range chunks {
		toks, err := decodeChunkProto(index(join(path, "model_input"), i), cb)
		if err != nil {
			return d, err
		}
		d.ModelInput.Chunks[i] = rl.Chunk{Type: rl.ChunkEncodedText, Tokens: toks}
	}
	n := d.ModelInput.Len()
	for k, t := range d.LossFnInputs {
		p := join(join(path, "loss_fn_inputs"), k)
		if t.Len() != n {
			return d, fieldErr(p, "%d elements, want %d (one per model_input token)", t.Len(), n)
		}
		if k == rl.InputTargetTokens {
			if t.DType != rl.Int64 {
				return d, fieldErr(p, "dtype %q, want \"int64\" token ids", t.DType)
			}
			for i, x := range t.Ints {
				if x < 0 || x > math.MaxInt32 {
					return d, fieldErr(index(p+".dense", i), "token id %d out of range; want 0 ≤ id < 2^31", x)
				}
			}
		}
	}
	return d, nil
}

// decodeChunkProto reads a tinker_public.Chunk, which must hold an
// EncodedTextChunk, and returns its tokens.
func decodeChunkProto(path string, b []byte) ([]int, error) {
	var (
		which  protowire.Number // the oneof case set last
		tokens []byte
	)
	m := pbMsg{path: path, names: pbChunkFields, b: b}
	for f, err := range m.fields() {
		if err != nil {
			return nil, err
		}
		if f.num < 1 || f.num > 3 {
			continue
		}
		if err := m.want(f, protowire.BytesType); err != nil {
			return nil, err
		}
		if f.num != which {
			tokens = nil // a new oneof case clears the old one
		}
		which = f.num
		if f.num != 1 {
			continue
		}
		// EncodedTextChunk; a second occurrence merges into the first.
		tm := pbMsg{path: join(path, "encoded_text"), names: pbTextFields, b: f.b}
		for tf, err := range tm.fields() {
			if err != nil {
				return nil, err
			}
			if tf.num == 1 {
				if err := tm.want(tf, protowire.BytesType); err != nil {
					return nil, err
				}
				tokens = tf.b
			}
		}
	}
	switch which {
	case 1:
		return decodeTokens(join(path, "encoded_text.tokens"), tokens)
	case 0:
		return nil, fieldErr(path, "empty chunk; want encoded_text")
	}
	return nil, fieldErr(join(path, pbChunkFields[which]), "%s chunks are not supported; want encoded_text", pbChunkFields[which])
}

// decodeTensorProto reads a tinker_public.Tensor with dense data.
func decodeTensorProto(path string, b []byte) (rl.TensorData, error) {
	var (
		dense  []byte
		sparse bool
		dtype  int32
		dims   []int64
	)
	m := pbMsg{path: path, names: pbTensorFields, b: b}
	for f, err := range m.fields() {
		if err != nil {
			return rl.TensorData{}, err
		}
		switch f.num {
		case 1, 2:
			if err := m.want(f, protowire.BytesType); err != nil {
				return rl.TensorData{}, err
			}
			sparse = f.num == 2
			dense = f.b
		case 3:
			if err := m.want(f, protowire.VarintType); err != nil {
				return rl.TensorData{}, err
			}
			dtype = int32(f.v)
		case 4:
			if dims, err = m.appendInt64s(dims, f); err != nil {
				return rl.TensorData{}, err
			}
		}
	}
	if sparse {
		return rl.TensorData{}, fieldErr(join(path, "sparse_csr"), "sparse CSR tensors are not supported; want dense")
	}
	if dtype != pbDTypeFloat32 && dtype != pbDTypeInt64 && dtype != pbDTypeInt32 && dtype != pbDTypeBFloat16 {
		return rl.TensorData{}, fieldErr(join(path, "dtype"), "%s; want DTYPE_FLOAT32 or DTYPE_INT64", pbDTypeName(dtype))
	}
	if err := checkElems(join(path, "dense"), dtype, dense); err != nil {
		return rl.TensorData{}, err
	}
	shape, err := checkShape(join(path, "shape"), dims)
	if err != nil {
		return rl.TensorData{}, err
	}
	t := rl.TensorData{DType: pbPublicDType(dtype), Shape: shape}
	t.Ints, t.Floats = decodeElems(dtype, dense)
	if len(dims) == 0 {
		t.Shape = []int{t.Len()}
	} else if n := t.Len(); shapeProduct(shape, n) != n {
		return rl.TensorData{}, fieldErr(join(path, "shape"), "%v does not hold the %d elements given", shape, n)
	}
	if err := t.Validate(); err != nil {
		return rl.TensorData{}, fieldErr(path, "%v", err)
	}
	return t, nil
}

// MarshalProto returns r as a protobuf tinker_public.ForwardBackwardRequest
// (see AppendProto).
func (r ForwardBackwardRequest) MarshalProto() ([]byte, error) { return r.AppendProto(nil) }

// AppendProto appends r as a protobuf tinker_public.ForwardBackwardRequest,
// the form SDK v0.25 sends: Forward becomes forward_only, a nil SeqID 0,
// tokens int32, float inputs float32 (rounded), int inputs int64, map
// entries sorted by key, a nil Shape written as 1-D. It fails, naming the
// field, on a seq_id outside int32, a token id outside int32, a chunk type
// other than encoded_text, a tensor whose data does not match its dtype or
// shape, or a non-finite float. It sizes the output once: one allocation
// when dst lacks room.
func (r ForwardBackwardRequest) AppendProto(dst []byte) ([]byte, error) {
	var seq uint64
	if r.SeqID != nil {
		if *r.SeqID < 0 || *r.SeqID > math.MaxInt32 {
			return dst, fieldErr("seq_id", "%d out of range; want 0 to 2^31-1", *r.SeqID)
		}
		seq = uint64(*r.SeqID)
	}
	sizes := make([]int, len(r.Input.Data))
	n := 0
	if r.ModelID != "" {
		n += sizeMessage(1, len(r.ModelID))
	}
	n += sizeVarintField(2, seq)
	for i, d := range r.Input.Data {
		sizes[i] = sizeDatumProto(d)
		n += sizeMessage(3, sizes[i])
	}
	if r.Input.Loss.Name != "" {
		n += sizeMessage(4, len(r.Input.Loss.Name))
	}
	n += sizeDoubleMap(5, r.Input.Loss.Config)
	if r.Forward {
		n += sizeVarintField(6, 1)
	}
	start := len(dst)
	dst = slices.Grow(dst, n)
	if r.ModelID != "" {
		dst = appendString(dst, 1, r.ModelID)
	}
	dst = appendVarintField(dst, 2, seq)
	var err error
	for i, d := range r.Input.Data {
		dst = appendMessageHeader(dst, 3, sizes[i])
		if dst, err = appendDatumProto(dst, index("data", i), d); err != nil {
			return dst[:start], err
		}
	}
	if r.Input.Loss.Name != "" {
		dst = appendString(dst, 4, string(r.Input.Loss.Name))
	}
	for k, v := range r.Input.Loss.Config {
		if err := finite(join("loss_fn_config", k), v); err != nil {
			return dst[:start], err
		}
	}
	dst = appendDoubleMap(dst, 5, r.Input.Loss.Config)
	if r.Forward {
		dst = appendVarintField(dst, 6, 1)
	}
	return dst, nil
}

// tensorShape is the shape written for t: its own, or 1-D.
func tensorShape(t rl.TensorData) []int {
	if t.Shape != nil {
		return t.Shape
	}
	return []int{t.Len()}
}

func sizeTensorProto(t rl.TensorData) int {
	return sizeMessage(1, elemBytes(t)) + sizeVarintField(3, 2) + sizePackedField(4, tensorShape(t))
}

func sizeDatumProto(d rl.Datum) int {
	n := 0
	for _, c := range d.ModelInput.Chunks {
		n += sizeMessage(1, sizeMessage(1, sizeTokens(1, c.Tokens)))
	}
	for k, t := range d.LossFnInputs {
		n += sizeMessage(2, sizeMessage(1, len(k))+sizeMessage(2, sizeTensorProto(t)))
	}
	return n
}

func appendDatumProto(dst []byte, path string, d rl.Datum) ([]byte, error) {
	var err error
	for i, c := range d.ModelInput.Chunks {
		p := index(join(path, "model_input"), i)
		if c.Type != "" && c.Type != rl.ChunkEncodedText {
			return dst, fieldErr(p, "chunk type %q cannot be encoded; want %q", c.Type, rl.ChunkEncodedText)
		}
		tn := sizeTokens(1, c.Tokens)
		dst = appendMessageHeader(dst, 1, sizeMessage(1, tn))
		dst = appendMessageHeader(dst, 1, tn)
		if dst, err = appendTokens(dst, 1, join(p, "encoded_text.tokens"), c.Tokens); err != nil {
			return dst, err
		}
	}
	for _, k := range sortedKeys(d.LossFnInputs) {
		t := d.LossFnInputs[k]
		p := join(join(path, "loss_fn_inputs"), k)
		dt, err := pbDType(join(p, "dtype"), t.DType)
		if err != nil {
			return dst, err
		}
		if err := checkTensorShape(join(p, "shape"), t); err != nil {
			return dst, err
		}
		tn := sizeTensorProto(t)
		dst = appendMessageHeader(dst, 2, sizeMessage(1, len(k))+sizeMessage(2, tn))
		dst = appendString(dst, 1, k)
		dst = appendMessageHeader(dst, 2, tn)
		dst = appendMessageHeader(dst, 1, elemBytes(t))
		if dst, err = appendElems(dst, join(p, "dense"), t); err != nil {
			return dst, err
		}
		dst = appendVarintField(dst, 3, uint64(dt))
		dst = appendPackedInts(dst, 4, tensorShape(t))
	}
	return dst, nil
}

// DecodeTrainingHeaderProto reads only model_id and seq_id of a protobuf
// ForwardBackwardRequest, as DecodeTrainingHeader does of a JSON body, so
// that a server can account for the seq_id of a request whose body is
// otherwise bad (else the calls after it wait for a seq_id that never
// comes). A body broken after those fields still names its call; seq_id 0
// means unset.
func DecodeTrainingHeaderProto(b []byte) (TrainingHeader, error) {
	var h TrainingHeader
	m := pbMsg{names: pbFBRequestFields, b: b}
	for f, err := range m.fields() {
		if err != nil {
			break
		}
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			if s, err := m.str(f); err == nil {
				h.ModelID = s
			}
		case f.num == 2 && f.typ == protowire.VarintType:
			seq := int64(int32(f.v))
			h.SeqID = &seq
		}
	}
	if h.SeqID != nil && *h.SeqID <= 0 {
		h.SeqID = nil
	}
	if h.ModelID == "" {
		return h, fieldErr("model_id", "empty or unreadable; want the id create_model returned")
	}
	return h, nil
}
