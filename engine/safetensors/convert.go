package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/tandemrl/tandem/engine/kernels"
)

// Floats64 decodes a floating tensor (F16, BF16, F32, F64) to float64.
func (t Tensor) Floats64() ([]float64, error) {
	n := t.Elems()
	if n*t.DType.Size() != len(t.Data) {
		return nil, fmt.Errorf("safetensors: %s tensor of shape %v has %d bytes", t.DType, t.Shape, len(t.Data))
	}
	out := make([]float64, n)
	d := t.Data
	switch t.DType {
	case F16:
		for i := range out {
			out[i] = float64(F16ToF32(binary.LittleEndian.Uint16(d[2*i:])))
		}
	case BF16:
		for i := range out {
			out[i] = float64(BF16ToF32(binary.LittleEndian.Uint16(d[2*i:])))
		}
	case F32:
		for i := range out {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(d[4*i:])))
		}
	case F64:
		for i := range out {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(d[8*i:]))
		}
	default:
		return nil, fmt.Errorf("safetensors: dtype %s is not a floating type; want F16, BF16, F32 or F64", t.DType)
	}
	return out, nil
}

// Ints64 decodes an I64 or I32 tensor.
func (t Tensor) Ints64() ([]int64, error) {
	n := t.Elems()
	if n*t.DType.Size() != len(t.Data) {
		return nil, fmt.Errorf("safetensors: %s tensor of shape %v has %d bytes", t.DType, t.Shape, len(t.Data))
	}
	out := make([]int64, n)
	switch t.DType {
	case I64:
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
		}
	case I32:
		for i := range out {
			out[i] = int64(int32(binary.LittleEndian.Uint32(t.Data[4*i:])))
		}
	default:
		return nil, fmt.Errorf("safetensors: dtype %s is not an integer type; want I64 or I32", t.DType)
	}
	return out, nil
}

// FromFloats encodes x as a tensor of dtype (F16, BF16, F32 or F64) with
// shape. Narrowing conversions round to nearest even.
func FromFloats(dtype DType, shape []int, x []float64) (Tensor, error) {
	t := Tensor{DType: dtype, Shape: append([]int(nil), shape...)}
	if t.Elems() != len(x) {
		return Tensor{}, fmt.Errorf("safetensors: shape %v holds %d elements, %d given", shape, t.Elems(), len(x))
	}
	switch dtype {
	case F16:
		t.Data = make([]byte, 2*len(x))
		for i, v := range x {
			binary.LittleEndian.PutUint16(t.Data[2*i:], F32ToF16(float32(v)))
		}
	case BF16:
		t.Data = make([]byte, 2*len(x))
		for i, v := range x {
			binary.LittleEndian.PutUint16(t.Data[2*i:], F32ToBF16(float32(v)))
		}
	case F32:
		t.Data = make([]byte, 4*len(x))
		for i, v := range x {
			binary.LittleEndian.PutUint32(t.Data[4*i:], math.Float32bits(float32(v)))
		}
	case F64:
		t.Data = make([]byte, 8*len(x))
		for i, v := range x {
			binary.LittleEndian.PutUint64(t.Data[8*i:], math.Float64bits(v))
		}
	default:
		return Tensor{}, fmt.Errorf("safetensors: cannot encode floats as %s; want F16, BF16, F32 or F64", dtype)
	}
	return t, nil
}

// FromInts encodes x as an I64 tensor.
func FromInts(shape []int, x []int64) (Tensor, error) {
	t := Tensor{DType: I64, Shape: append([]int(nil), shape...)}
	if t.Elems() != len(x) {
		return Tensor{}, fmt.Errorf("safetensors: shape %v holds %d elements, %d given", shape, t.Elems(), len(x))
	}
	t.Data = make([]byte, 8*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint64(t.Data[8*i:], uint64(v))
	}
	return t, nil
}

// F32ToBF16 rounds f to bfloat16 (nearest even; NaN stays NaN), as
// kernels.ToBF16 does.
func F32ToBF16(f float32) uint16 { return uint16(kernels.ToBF16(f)) }

// BF16ToF32 widens a bfloat16 value (exact), as kernels.BF16.Float32 does.
func BF16ToF32(b uint16) float32 { return kernels.BF16(b).Float32() }

// F16ToF32 widens an IEEE half-precision value (exact), as
// kernels.F16.Float32 does.
func F16ToF32(h uint16) float32 { return kernels.F16(h).Float32() }

// F32ToF16 rounds f to IEEE half precision (nearest even, overflow to
// ±Inf), as kernels.ToF16 does.
func F32ToF16(f float32) uint16 { return uint16(kernels.ToF16(f)) }

// IsFloat reports whether d is a floating dtype (F16, BF16, F32, F64).
func (d DType) IsFloat() bool {
	switch d {
	case F16, BF16, F32, F64:
		return true
	}
	return false
}

// DecodeFloats decodes the little-endian values of dtype (F16, BF16, F32,
// F64) in src into dst, which must hold len(src)/size elements. BF16, F16
// and F32 to float32 are exact; F64 to float32 rounds.
func DecodeFloats[F ~float32 | ~float64](dtype DType, src []byte, dst []F) error {
	size := dtype.Size()
	if !dtype.IsFloat() {
		return fmt.Errorf("safetensors: dtype %s is not a floating type; want F16, BF16, F32 or F64", dtype)
	}
	if len(src) != len(dst)*size {
		return fmt.Errorf("safetensors: %d bytes of %s for %d elements", len(src), dtype, len(dst))
	}
	switch dtype {
	case F16:
		for i := range dst {
			dst[i] = F(F16ToF32(binary.LittleEndian.Uint16(src[2*i:])))
		}
	case BF16:
		for i := range dst {
			dst[i] = F(BF16ToF32(binary.LittleEndian.Uint16(src[2*i:])))
		}
	case F32:
		for i := range dst {
			dst[i] = F(math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:])))
		}
	case F64:
		for i := range dst {
			dst[i] = F(math.Float64frombits(binary.LittleEndian.Uint64(src[8*i:])))
		}
	}
	return nil
}

// EncodeFloats returns src as little-endian values of dtype (F16, BF16,
// F32, F64); narrowing rounds to nearest even. A finite value that would
// round to an infinity (past 65504 in F16) is an error wrapping
// [ErrOverflow] naming the element; NaNs and infinities are kept.
func EncodeFloats[F ~float32 | ~float64](dtype DType, src []F) ([]byte, error) {
	if !dtype.IsFloat() {
		return nil, fmt.Errorf("safetensors: cannot encode floats as %s; want F16, BF16, F32 or F64", dtype)
	}
	out := make([]byte, len(src)*dtype.Size())
	// overflow reports a finite value that dtype rounds to an infinity.
	overflow := func(i int, max float64) error {
		return fmt.Errorf("%w: element %d is %g, past %s's largest finite value ±%g", ErrOverflow, i, float64(src[i]), dtype, max)
	}
	switch dtype {
	case F16:
		for i, v := range src {
			h := F32ToF16(float32(v))
			if h&halfF16.exp == halfF16.exp && !math.IsInf(float64(v), 0) && v == v {
				return nil, overflow(i, 65504)
			}
			binary.LittleEndian.PutUint16(out[2*i:], h)
		}
	case BF16:
		for i, v := range src {
			b := F32ToBF16(float32(v))
			if b&halfBF16.exp == halfBF16.exp && !math.IsInf(float64(v), 0) && v == v {
				return nil, overflow(i, float64(BF16ToF32(0x7f7f)))
			}
			binary.LittleEndian.PutUint16(out[2*i:], b)
		}
	case F32:
		for i, v := range src {
			f := float32(v)
			if math.IsInf(float64(f), 0) && !math.IsInf(float64(v), 0) {
				return nil, overflow(i, math.MaxFloat32)
			}
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
		}
	case F64:
		for i, v := range src {
			binary.LittleEndian.PutUint64(out[8*i:], math.Float64bits(float64(v)))
		}
	}
	return out, nil
}
