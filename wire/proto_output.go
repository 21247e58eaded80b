package wire

import (
	"encoding/binary"
	"slices"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tandemrl/tandem/rl"
)

var (
	pbFBOutputFields = []string{1: "loss_fn_output_type", 2: "loss_fn_outputs", 3: "metrics"}
	pbRecordFields   = []string{1: "type_tag", 2: "fields", 3: "num_datums"}
	pbBatchedFields  = []string{1: "data", 2: "offsets", 3: "dtype", 4: "trailing_shape"}
)

// pbRecord is a run of consecutive datums whose outputs share dtype and
// trailing shape field by field: one ArrayRecord.
type pbRecord struct{ from, to int }

// outputRecords splits w's datums into ArrayRecords and checks that every
// datum has the fields of the first (the SDK reads them field by field).
func outputRecords(w ForwardBackwardOutput, keys []string) ([]pbRecord, error) {
	var recs []pbRecord
	for i, d := range w.LossFnOutputs {
		p := index("loss_fn_outputs", i)
		if len(d) != len(keys) {
			return nil, fieldErr(p, "fields %v, want %v like loss_fn_outputs[0]: the protobuf form needs the same fields in every datum", sortedKeys(d), keys)
		}
		same := i > 0
		for _, k := range keys {
			t, ok := d[k]
			if !ok {
				return nil, fieldErr(p, "fields %v, want %v like loss_fn_outputs[0]: the protobuf form needs the same fields in every datum", sortedKeys(d), keys)
			}
			if _, err := pbDType(join(join(p, k), "dtype"), t.DType); err != nil {
				return nil, err
			}
			if err := checkTensorShape(join(join(p, k), "shape"), t); err != nil {
				return nil, err
			}
			if same {
				prev := w.LossFnOutputs[i-1][k]
				same = prev.DType == t.DType && slices.Equal(trailing(prev), trailing(t))
			}
		}
		if same {
			recs[len(recs)-1].to = i + 1
		} else {
			recs = append(recs, pbRecord{i, i + 1})
		}
	}
	return recs, nil
}

// trailing returns t's shape after the leading dimension ([] for 1-D or 0-D).
func trailing(t rl.TensorData) []int {
	if len(t.Shape) <= 1 {
		return nil
	}
	return t.Shape[1:]
}

// sizeBatched returns the size of the BatchedTensor of field k over rec.
func sizeBatched(w ForwardBackwardOutput, rec pbRecord, k string) int {
	data := 0
	for _, d := range w.LossFnOutputs[rec.from:rec.to] {
		data += elemBytes(d[k])
	}
	t := w.LossFnOutputs[rec.from][k]
	n := sizeMessage(2, 8*(rec.to-rec.from+1)) + sizeVarintField(3, 1) + sizePackedField(4, trailing(t))
	if data > 0 {
		n += sizeMessage(1, data)
	}
	return n
}

func sizeRecord(w ForwardBackwardOutput, rec pbRecord, keys []string) int {
	n := sizeVarintField(3, uint64(rec.to-rec.from))
	if w.LossFnOutputType != "" {
		n += sizeMessage(1, len(w.LossFnOutputType))
	}
	for _, k := range keys {
		n += sizeMessage(2, sizeMessage(1, len(k))+sizeMessage(2, sizeBatched(w, rec, k)))
	}
	return n
}

// MarshalProto returns w as a protobuf tinker_public.ForwardBackwardOutput
// (see AppendProto).
func (w ForwardBackwardOutput) MarshalProto() ([]byte, error) { return w.AppendProto(nil) }

// AppendProto appends w as a protobuf tinker_public.ForwardBackwardOutput,
// the form SDK v0.25 asks for with Accept: application/x-protobuf. Each run
// of consecutive datums whose fields share dtype and trailing shape becomes
// one ArrayRecord (type_tag LossFnOutputType, num_datums set) holding one
// BatchedTensor per field: the datums' elements concatenated (float32 or
// int64), N+1 byte offsets, the shape after the leading dimension. Metrics
// are doubles. Every datum must have the same fields; a 0-D tensor is
// written as 1-D. It fails, naming the field, on mismatched fields, a
// tensor whose data does not match its dtype or shape, or a non-finite float.
func (w ForwardBackwardOutput) AppendProto(dst []byte) ([]byte, error) {
	var keys []string
	if len(w.LossFnOutputs) > 0 {
		keys = sortedKeys(w.LossFnOutputs[0])
	}
	recs, err := outputRecords(w, keys)
	if err != nil {
		return dst, err
	}
	n := sizeDoubleMap(3, w.Metrics)
	if w.LossFnOutputType != "" {
		n += sizeMessage(1, len(w.LossFnOutputType))
	}
	sizes := make([]int, len(recs))
	for i, rec := range recs {
		sizes[i] = sizeRecord(w, rec, keys)
		n += sizeMessage(2, sizes[i])
	}
	start := len(dst)
	dst = slices.Grow(dst, n)
	if w.LossFnOutputType != "" {
		dst = appendString(dst, 1, w.LossFnOutputType)
	}
	for i, rec := range recs {
		dst = appendMessageHeader(dst, 2, sizes[i])
		if w.LossFnOutputType != "" {
			dst = appendString(dst, 1, w.LossFnOutputType)
		}
		for _, k := range keys {
			bn := sizeBatched(w, rec, k)
			dst = appendMessageHeader(dst, 2, sizeMessage(1, len(k))+sizeMessage(2, bn))
			dst = appendString(dst, 1, k)
			dst = appendMessageHeader(dst, 2, bn)
			first := w.LossFnOutputs[rec.from][k]
			data := 0
			for _, d := range w.LossFnOutputs[rec.from:rec.to] {
				data += elemBytes(d[k])
			}
			if data > 0 {
				dst = appendMessageHeader(dst, 1, data)
				for j, d := range w.LossFnOutputs[rec.from:rec.to] {
					if dst, err = appendElems(dst, join(index("loss_fn_outputs", rec.from+j), k), d[k]); err != nil {
						return dst[:start], err
					}
				}
			}
			dst = appendMessageHeader(dst, 2, 8*(rec.to-rec.from+1))
			off := 0
			dst = binary.LittleEndian.AppendUint64(dst, 0)
			for _, d := range w.LossFnOutputs[rec.from:rec.to] {
				off += elemBytes(d[k])
				dst = binary.LittleEndian.AppendUint64(dst, uint64(off))
			}
			dt, _ := pbDType("", first.DType) // checked by outputRecords
			dst = appendVarintField(dst, 3, uint64(dt))
			dst = appendPackedInts(dst, 4, trailing(first))
		}
		dst = appendVarintField(dst, 3, uint64(rec.to-rec.from))
	}
	for k, v := range w.Metrics {
		if err := finite(join("metrics", k), v); err != nil {
			return dst[:start], err
		}
	}
	dst = appendDoubleMap(dst, 3, w.Metrics)
	return dst, nil
}

// pbBatched is a BatchedTensor as read, aliasing the input.
type pbBatched struct {
	data, offsets []byte
	dtype         int32
	dims          []int64
}

// DecodeForwardBackwardOutputProto decodes a protobuf
// tinker_public.ForwardBackwardOutput as the SDK does
// (proto/response_conv.py): each ArrayRecord's BatchedTensors are sliced
// into per-datum tensors of shape [leading, trailing_shape...], INT32
// widened to int64 and BFLOAT16 to float32; num_datums is authoritative
// (0 with fields present means "count the offsets"); loss_fn_output_type
// is the bare class name after the last ':' ("ArrayRecord" if absent and
// there are no datums). Stricter than the SDK: every
// field of a record must cover its num_datums, offsets must be whole
// elements, in order and inside data, each datum's length a multiple of
// the trailing shape, floats finite; at most MaxProtoDatums datums. The
// tensors of one field of one record share one backing array.
func DecodeForwardBackwardOutputProto(b []byte) (ForwardBackwardOutput, error) {
	w := ForwardBackwardOutput{Metrics: map[string]float64{}}
	var records [][]byte
	m := pbMsg{names: pbFBOutputFields, b: b}
	for f, err := range m.fields() {
		if err != nil {
			return w, err
		}
		switch f.num {
		case 1:
			if w.LossFnOutputType, err = m.str(f); err != nil {
				return w, err
			}
		case 2:
			if err := m.want(f, protowire.BytesType); err != nil {
				return w, err
			}
			records = append(records, f.b)
		case 3:
			if err := m.want(f, protowire.BytesType); err != nil {
				return w, err
			}
			if err := doubleMapEntry("metrics", f, w.Metrics); err != nil {
				return w, err
			}
		}
	}
	if i := strings.LastIndexByte(w.LossFnOutputType, ':'); i >= 0 {
		w.LossFnOutputType = w.LossFnOutputType[i+1:]
	}
	w.LossFnOutputs = []map[string]rl.TensorData{}
	for i, rb := range records {
		var err error
		if w.LossFnOutputs, err = decodeRecordProto(index("loss_fn_outputs", i), rb, w.LossFnOutputs); err != nil {
			return w, err
		}
	}
	if len(w.LossFnOutputs) == 0 && w.LossFnOutputType == "" {
		w.LossFnOutputType = LossFnOutputType // as the SDK reads it
	}
	return w, nil
}

// decodeRecordProto reads one ArrayRecord and appends its datums to out.
func decodeRecordProto(path string, b []byte, out []map[string]rl.TensorData) ([]map[string]rl.TensorData, error) {
	var (
		num    int64
		fields = map[string]*pbBatched{}
		keys   []string
	)
	m := pbMsg{path: path, names: pbRecordFields, b: b}
	for f, err := range m.fields() {
		if err != nil {
			return out, err
		}
		switch f.num {
		case 1:
			if _, err := m.str(f); err != nil {
				return out, err
			}
		case 2:
			if err := m.want(f, protowire.BytesType); err != nil {
				return out, err
			}
			fp := join(path, "fields")
			k, v, err := mapEntry(fp, f, protowire.BytesType)
			if err != nil {
				return out, err
			}
			bt, err := decodeBatchedProto(join(fp, k), v.b)
			if err != nil {
				return out, err
			}
			if _, dup := fields[k]; !dup {
				keys = append(keys, k)
			}
			fields[k] = bt
		case 3:
			if err := m.want(f, protowire.VarintType); err != nil {
				return out, err
			}
			num = int64(f.v)
		}
	}
	if num < 0 || num > int64(MaxProtoDatums-len(out)) {
		return out, fieldErr(join(path, "num_datums"), "%d out of range; want 0 to %d datums in all", num, MaxProtoDatums)
	}
	n := int(num)
	if n == 0 && len(keys) > 0 { // messages predating num_datums
		n = len(fields[keys[0]].offsets)/8 - 1
		if n < 0 || n > MaxProtoDatums-len(out) {
			return out, fieldErr(join(path, "num_datums"), "0 and %d offsets; want N+1 offsets for N ≤ %d datums", len(fields[keys[0]].offsets)/8, MaxProtoDatums)
		}
	}
	base := len(out)
	for range n {
		out = append(out, make(map[string]rl.TensorData, len(keys)))
	}
	for _, k := range keys {
		if err := sliceBatched(join(join(path, "fields"), k), k, fields[k], out[base:]); err != nil {
			return out, err
		}
	}
	return out, nil
}

func decodeBatchedProto(path string, b []byte) (*pbBatched, error) {
	bt := &pbBatched{}
	m := pbMsg{path: path, names: pbBatchedFields, b: b}
	for f, err := range m.fields() {
		if err != nil {
			return nil, err
		}
		switch f.num {
		case 1, 2:
			if err := m.want(f, protowire.BytesType); err != nil {
				return nil, err
			}
			if f.num == 1 {
				bt.data = f.b
			} else {
				bt.offsets = f.b
			}
		case 3:
			if err := m.want(f, protowire.VarintType); err != nil {
				return nil, err
			}
			bt.dtype = int32(f.v)
		case 4:
			if bt.dims, err = m.appendInt64s(bt.dims, f); err != nil {
				return nil, err
			}
		}
	}
	return bt, nil
}

// sliceBatched checks bt and stores its per-datum tensors in datums under key.
func sliceBatched(path, key string, bt *pbBatched, datums []map[string]rl.TensorData) error {
	size := pbItemSize(bt.dtype)
	if size == 0 {
		return fieldErr(join(path, "dtype"), "%s; want DTYPE_FLOAT32, DTYPE_INT64, DTYPE_INT32 or DTYPE_BFLOAT16", pbDTypeName(bt.dtype))
	}
	n := len(datums)
	op := join(path, "offsets")
	if len(bt.offsets) != 8*(n+1) {
		return fieldErr(op, "%d bytes, want %d: N+1 int64 byte offsets for the record's %d datums", len(bt.offsets), 8*(n+1), n)
	}
	if err := checkElems(join(path, "data"), bt.dtype, bt.data); err != nil {
		return err
	}
	tr, err := checkShape(join(path, "trailing_shape"), bt.dims)
	if err != nil {
		return err
	}
	offs := make([]int, n+1)
	for i := range offs {
		o := int64(binary.LittleEndian.Uint64(bt.offsets[8*i:]))
		switch {
		case o < 0 || o > int64(len(bt.data)):
			return fieldErr(index(op, i), "%d outside data's %d bytes", o, len(bt.data))
		case o%int64(size) != 0:
			return fieldErr(index(op, i), "%d is not a multiple of the %d-byte element", o, size)
		case i > 0 && int(o) < offs[i-1]:
			return fieldErr(index(op, i), "%d before offset %d", o, offs[i-1])
		}
		offs[i] = int(o)
	}
	ints, floats := decodeElems(bt.dtype, bt.data[offs[0]:offs[n]])
	per := shapeProduct(tr, len(bt.data)/size)
	shapes := make([]int, n*(1+len(tr)))
	dt := pbPublicDType(bt.dtype)
	for i := range datums {
		lo, hi := (offs[i]-offs[0])/size, (offs[i+1]-offs[0])/size
		c := hi - lo
		lead := 0
		if per > 0 {
			lead = c / per
		}
		if lead*per != c {
			return fieldErr(index(op, i+1), "datum %d has %d elements, not a whole number of trailing_shape %v", i, c, tr)
		}
		shape := shapes[i*(1+len(tr)) : (i+1)*(1+len(tr)) : (i+1)*(1+len(tr))]
		shape[0] = lead
		copy(shape[1:], tr)
		t := rl.TensorData{DType: dt, Shape: shape}
		if dt == rl.Int64 {
			t.Ints = ints[lo:hi:hi]
		} else {
			t.Floats = floats[lo:hi:hi]
			for j, f := range t.Floats {
				if err := finite(index(join(path, "data"), lo+j), f); err != nil {
					return err
				}
			}
		}
		datums[i][key] = t
	}
	return nil
}
