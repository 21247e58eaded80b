package wire

import (
	"encoding/binary"
	"iter"
	"math"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// The protobuf form of the Tinker API (SDK v0.25.0, package tinker_public):
// forward_backward requests are sent as a ForwardBackwardRequest message
// with Content-Type ContentTypeProto, and retrieve_future answers for
// sample and forward/forward_backward results may be a bare SampleResponse
// or ForwardBackwardOutput message when the client's Accept asks for it.
// Everything else stays JSON.
//
// The codecs are hand-written on encoding/protowire. Decoders follow
// protobuf's rules where they are safe (unknown fields are skipped, a
// repeated scalar field may be packed or not, the last of a repeated
// singular field wins, a singular message field given twice is merged,
// map entries may lack their key or value) and are stricter where being
// lenient would hide a broken client: a known field with the wrong wire
// type, a string that is not UTF-8, or a byte length that is not a whole
// number of elements is an error. Every error is a *FieldError naming the
// field by its path in the message, e.g. "data[0].loss_fn_inputs.weights.dense".
// Decoders never panic and allocate in proportion to the input's length
// (fuzz tests check both). Encoders write map entries sorted by key, so
// their output is deterministic and matches the SDK's deterministic
// serialization byte for byte.

// ContentTypeProto is the media type of a protobuf body.
const ContentTypeProto = "application/x-protobuf"

// MaxProtoDatums bounds the datums a protobuf ForwardBackwardOutput may
// declare: a record without fields carries only a count, so the count
// must be bounded by something other than the message's length.
const MaxProtoDatums = 1 << 16

// DType values of tinker_public.DType.
const (
	pbDTypeUnspecified = 0
	pbDTypeFloat32     = 1
	pbDTypeInt64       = 2
	pbDTypeInt32       = 3
	pbDTypeBFloat16    = 4
)

// StopReason values of tinker_public.StopReason.
const (
	pbStopStop   = 0
	pbStopLength = 1
)

// pbField is one field of a message: its number, wire type and value.
// For a length-delimited field b aliases the input.
type pbField struct {
	num protowire.Number
	typ protowire.Type
	v   uint64
	b   []byte
}

// pbMsg iterates over the fields of one encoded message. names gives the
// field names by number, for error paths.
type pbMsg struct {
	path  string
	names []string
	b     []byte
}

// name returns the path of field num.
func (m *pbMsg) name(num protowire.Number) string {
	if int(num) < len(m.names) && m.names[num] != "" {
		return join(m.path, m.names[num])
	}
	return join(m.path, "#"+strconv.Itoa(int(num)))
}

// next reads the next field; ok is false at the end of the message.
// Groups (wire types 3 and 4, deprecated) are skipped whole.
func (m *pbMsg) next() (f pbField, ok bool, err error) {
	for len(m.b) > 0 {
		num, typ, n := protowire.ConsumeTag(m.b)
		if n < 0 {
			where := m.path
			if where == "" {
				where = "body"
			}
			return f, false, fieldErr(where, "bad protobuf field tag: %v", protowire.ParseError(n))
		}
		m.b = m.b[n:]
		f = pbField{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(m.b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(m.b)
			f.v = uint64(v)
		case protowire.Fixed64Type:
			f.v, n = protowire.ConsumeFixed64(m.b)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(m.b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, m.b)
		}
		if n < 0 {
			return f, false, fieldErr(m.name(num), "bad protobuf %s value: %v", wireTypeName(typ), protowire.ParseError(n))
		}
		m.b = m.b[n:]
		if typ == protowire.StartGroupType {
			continue
		}
		return f, true, nil
	}
	return f, false, nil
}

// fields yields the message's fields in order (see next); an error ends
// the iteration, yielded with the field it stopped at. The caller returns
// on it:
//
//	for f, err := range m.fields() {
//		if err != nil {
//			return err
//		}
//		switch f.num { … }
//	}
func (m *pbMsg) fields() iter.Seq2[pbField, error] {
	return func(yield func(pbField, error) bool) {
		for {
			f, ok, err := m.next()
			if err != nil {
				yield(f, err)
				return
			}
			if !ok || !yield(f, nil) {
				return
			}
		}
	}
}

// want checks that f has wire type t.
func (m *pbMsg) want(f pbField, t protowire.Type) error {
	if f.typ != t {
		return fieldErr(m.name(f.num), "got wire type %s, want %s", wireTypeName(f.typ), wireTypeName(t))
	}
	return nil
}

// str checks that f is a UTF-8 string field and returns it.
func (m *pbMsg) str(f pbField) (string, error) {
	if err := m.want(f, protowire.BytesType); err != nil {
		return "", err
	}
	if !utf8.Valid(f.b) {
		return "", fieldErr(m.name(f.num), "string is not valid UTF-8")
	}
	return string(f.b), nil
}

// appendInt64s reads a repeated int64 field, packed or not, onto dst.
func (m *pbMsg) appendInt64s(dst []int64, f pbField) ([]int64, error) {
	switch f.typ {
	case protowire.VarintType:
		return append(dst, int64(f.v)), nil
	case protowire.BytesType:
		for b := f.b; len(b) > 0; {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return dst, fieldErr(m.name(f.num), "bad packed varint: %v", protowire.ParseError(n))
			}
			dst = append(dst, int64(v))
			b = b[n:]
		}
		return dst, nil
	}
	return dst, fieldErr(m.name(f.num), "got wire type %s, want varint or length-delimited (packed)", wireTypeName(f.typ))
}

func wireTypeName(t protowire.Type) string {
	switch t {
	case protowire.VarintType:
		return "varint"
	case protowire.Fixed32Type:
		return "fixed32"
	case protowire.Fixed64Type:
		return "fixed64"
	case protowire.BytesType:
		return "length-delimited"
	case protowire.StartGroupType:
		return "start-group"
	case protowire.EndGroupType:
		return "end-group"
	}
	return strconv.Itoa(int(t))
}

// mapEntry reads a map entry {key = 1; value = 2} whose key is a string.
// An absent key is "", an absent value is the zero value (val.typ 0 and
// a nil val.b); like protobuf, a repeated key or value takes the last.
func mapEntry(path string, f pbField, valueType protowire.Type) (key string, val pbField, err error) {
	m := pbMsg{path: path, names: []string{1: "key", 2: "value"}, b: f.b}
	val = pbField{typ: valueType}
	for e, err := range m.fields() {
		if err != nil {
			return key, val, err
		}
		switch e.num {
		case 1:
			if key, err = m.str(e); err != nil {
				return key, val, err
			}
		case 2:
			if err := m.want(e, valueType); err != nil {
				return key, val, err
			}
			val = e
		}
	}
	return key, val, nil
}

// doubleMapEntry reads one entry of a map<string, double> field into out.
func doubleMapEntry(path string, f pbField, out map[string]float64) error {
	k, v, err := mapEntry(path, f, protowire.Fixed64Type)
	if err != nil {
		return err
	}
	x := math.Float64frombits(v.v)
	if err := finite(join(path, k), x); err != nil {
		return err
	}
	out[k] = x
	return nil
}

// finite checks that x is a finite number.
func finite(path string, x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return fieldErr(path, "%v; want a finite number", x)
	}
	return nil
}

// appendDoubleMap writes m as map<string, double> field num, sorted by key.
func appendDoubleMap(dst []byte, num protowire.Number, m map[string]float64) []byte {
	for _, k := range sortedKeys(m) {
		dst = protowire.AppendTag(dst, num, protowire.BytesType)
		dst = protowire.AppendVarint(dst, uint64(protowire.SizeTag(1)+protowire.SizeBytes(len(k))+protowire.SizeTag(2)+protowire.SizeFixed64()))
		dst = appendString(dst, 1, k)
		dst = protowire.AppendTag(dst, 2, protowire.Fixed64Type)
		dst = protowire.AppendFixed64(dst, math.Float64bits(m[k]))
	}
	return dst
}

// sizeDoubleMap returns the encoded size of appendDoubleMap's output.
func sizeDoubleMap(num protowire.Number, m map[string]float64) int {
	n := 0
	for k := range m {
		n += sizeMessage(num, protowire.SizeTag(1)+protowire.SizeBytes(len(k))+protowire.SizeTag(2)+protowire.SizeFixed64())
	}
	return n
}

// appendString writes string field num (always, even when empty: map keys need it).
func appendString(dst []byte, num protowire.Number, s string) []byte {
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendString(dst, s)
}

// appendMessageHeader writes the tag and length of a message field of size n.
func appendMessageHeader(dst []byte, num protowire.Number, n int) []byte {
	dst = protowire.AppendTag(dst, num, protowire.BytesType)
	return protowire.AppendVarint(dst, uint64(n))
}

// sizeMessage returns the encoded size of a length-delimited field of n bytes.
func sizeMessage(num protowire.Number, n int) int {
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

// appendVarintField writes varint field num unless v is 0 (proto3 default).
func appendVarintField(dst []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return dst
	}
	dst = protowire.AppendTag(dst, num, protowire.VarintType)
	return protowire.AppendVarint(dst, v)
}

func sizeVarintField(num protowire.Number, v uint64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(v)
}

// sizePackedInt64s returns the payload size of a packed repeated int64 field.
func sizePackedInts(v []int) int {
	n := 0
	for _, x := range v {
		n += protowire.SizeVarint(uint64(int64(x)))
	}
	return n
}

// appendPackedInts writes v as a packed repeated int64 field, if not empty.
func appendPackedInts(dst []byte, num protowire.Number, v []int) []byte {
	if len(v) == 0 {
		return dst
	}
	dst = appendMessageHeader(dst, num, sizePackedInts(v))
	for _, x := range v {
		dst = protowire.AppendVarint(dst, uint64(int64(x)))
	}
	return dst
}

func sizePackedField(num protowire.Number, v []int) int {
	if len(v) == 0 {
		return 0
	}
	return sizeMessage(num, sizePackedInts(v))
}

// float32s decodes little-endian float32s.
func float32s(b []byte, out []float64) {
	for i := range out {
		out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
	}
}
