package wire

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/tandemrl/tandem/rl"
)

// Element sizes and conversions of tinker_public.DType. INT32 widens to
// int64 and BFLOAT16 to float32, as the SDK does (proto/response_conv.py).

var pbDTypeNames = map[int32]string{
	pbDTypeUnspecified: "DTYPE_UNSPECIFIED", pbDTypeFloat32: "DTYPE_FLOAT32",
	pbDTypeInt64: "DTYPE_INT64", pbDTypeInt32: "DTYPE_INT32", pbDTypeBFloat16: "DTYPE_BFLOAT16",
}

func pbDTypeName(d int32) string {
	if s, ok := pbDTypeNames[d]; ok {
		return s
	}
	return "unknown dtype " + strconv.Itoa(int(d))
}

// pbItemSize returns the element size of d, or 0 for an unknown dtype.
func pbItemSize(d int32) int {
	switch d {
	case pbDTypeFloat32, pbDTypeInt32:
		return 4
	case pbDTypeInt64:
		return 8
	case pbDTypeBFloat16:
		return 2
	}
	return 0
}

// pbPublicDType is the rl dtype d widens to.
func pbPublicDType(d int32) rl.DType {
	if d == pbDTypeInt64 || d == pbDTypeInt32 {
		return rl.Int64
	}
	return rl.Float32
}

// pbDType returns the proto dtype of an rl dtype, or an error naming path.
func pbDType(path string, d rl.DType) (int32, error) {
	switch d {
	case rl.Float32:
		return pbDTypeFloat32, nil
	case rl.Int64:
		return pbDTypeInt64, nil
	}
	return 0, fieldErr(path, "dtype %q unknown; want int64 or float32", d)
}

// checkElems checks that b holds whole elements of d.
func checkElems(path string, d int32, b []byte) error {
	size := pbItemSize(d)
	if size == 0 {
		return fieldErr(path, "%s; want DTYPE_FLOAT32, DTYPE_INT64, DTYPE_INT32 or DTYPE_BFLOAT16", pbDTypeName(d))
	}
	if len(b)%size != 0 {
		return fieldErr(path, "%d bytes is not a whole number of %d-byte %s elements", len(b), size, pbDTypeName(d))
	}
	return nil
}

// decodeElems converts b (whole elements of d, checked) into ints or
// floats, whichever pbPublicDType(d) names; the other is nil.
func decodeElems(d int32, b []byte) (ints []int64, floats []float64) {
	switch d {
	case pbDTypeInt64:
		ints = make([]int64, len(b)/8)
		for i := range ints {
			ints[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
		}
	case pbDTypeInt32:
		ints = make([]int64, len(b)/4)
		for i := range ints {
			ints[i] = int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
		}
	case pbDTypeFloat32:
		floats = make([]float64, len(b)/4)
		float32s(b, floats)
	case pbDTypeBFloat16:
		floats = make([]float64, len(b)/2)
		for i := range floats {
			floats[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16))
		}
	}
	return ints, floats
}

// checkShape converts dims read from the wire, each 0 ≤ d ≤ 2^31.
func checkShape(path string, dims []int64) ([]int, error) {
	out := make([]int, len(dims))
	for i, d := range dims {
		if d < 0 || d > 1<<31 {
			return nil, fieldErr(index(path, i), "dimension %d out of range; want 0 to 2^31", d)
		}
		out[i] = int(d)
	}
	return out, nil
}

// shapeProduct returns the product of dims, saturating at limit+1 so it
// cannot overflow.
func shapeProduct(dims []int, limit int) int {
	p := 1
	for _, d := range dims {
		if d == 0 {
			return 0
		}
		if p > limit/d {
			p = limit + 1
		} else {
			p *= d
		}
	}
	return p
}

// appendElems writes t's elements as little-endian float32 or int64 and
// checks them: floats must be finite.
func appendElems(dst []byte, path string, t rl.TensorData) ([]byte, error) {
	if t.DType == rl.Int64 {
		if t.Floats != nil {
			return dst, fieldErr(path, "dtype int64 but float data given")
		}
		for _, x := range t.Ints {
			dst = binary.LittleEndian.AppendUint64(dst, uint64(x))
		}
		return dst, nil
	}
	if t.Ints != nil {
		return dst, fieldErr(path, "dtype float32 but integer data given")
	}
	for i, f := range t.Floats {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return dst, fieldErr(index(path, i), "%v; values must be finite", f)
		}
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(float32(f)))
	}
	return dst, nil
}

// elemBytes returns the encoded size of t's elements.
func elemBytes(t rl.TensorData) int {
	if t.DType == rl.Int64 {
		return 8 * len(t.Ints)
	}
	return 4 * len(t.Floats)
}

// checkTensorShape checks that t's shape (when given) holds its elements.
func checkTensorShape(path string, t rl.TensorData) error {
	if t.Shape == nil {
		return nil
	}
	for _, d := range t.Shape {
		if d < 0 {
			return fieldErr(path, "shape %v has a negative dimension", t.Shape)
		}
	}
	if n := t.Len(); shapeProduct(t.Shape, n) != n {
		return fieldErr(path, "shape %v does not hold %d elements", t.Shape, n)
	}
	return nil
}

// sortedKeys returns m's keys in byte order, the order of a deterministic
// protobuf serialization.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare[string])
	return keys
}

// appendTokens writes tokens as a bytes field of little-endian int32s.
func appendTokens(dst []byte, num protowire.Number, path string, toks []int) ([]byte, error) {
	if len(toks) == 0 {
		return dst, nil
	}
	dst = appendMessageHeader(dst, num, 4*len(toks))
	for i, t := range toks {
		if t < 0 || t > math.MaxInt32 {
			return dst, fieldErr(index(path, i), "token id %d out of range; want 0 ≤ id < 2^31", t)
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(t))
	}
	return dst, nil
}

func sizeTokens(num protowire.Number, toks []int) int {
	if len(toks) == 0 {
		return 0
	}
	return sizeMessage(num, 4*len(toks))
}

// decodeTokens reads little-endian int32 token ids.
func decodeTokens(path string, b []byte) ([]int, error) {
	if len(b)%4 != 0 {
		return nil, fieldErr(path, "%d bytes is not a whole number of 4-byte int32 tokens", len(b))
	}
	out := make([]int, len(b)/4)
	for i := range out {
		t := int32(binary.LittleEndian.Uint32(b[4*i:]))
		if t < 0 {
			return nil, fieldErr(index(path, i), "token id %d out of range; want 0 ≤ id < 2^31", t)
		}
		out[i] = int(t)
	}
	return out, nil
}
