package safetensors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"
)

// half is a 16-bit floating dtype as its readers see it: a value whose
// exponent bits are all ones is not finite, a NaN when its mantissa bits
// are not all zero as well (the sign is the top bit in both formats).
type half struct {
	dtype    DType
	exp, man uint16
}

var (
	halfBF16 = half{dtype: BF16, exp: 0x7f80, man: 0x007f}
	halfF16  = half{dtype: F16, exp: 0x7c00, man: 0x03ff}
)

// ReadBF16 reads the BF16 tensor t from r into dst (len(dst) must be
// t.Elems()) as stored, without widening, a chunk at a time through buf
// (allocated when nil or shorter than 2 bytes). With finite set, a NaN or
// ±Inf is an error wrapping [ErrNotFinite] that gives the element index.
func ReadBF16[B ~uint16](r io.ReaderAt, t TensorInfo, dst []B, buf []byte, finite bool) error {
	return read16(halfBF16, r, t, dst, buf, finite)
}

// ReadF16 is [ReadBF16] for an F16 (IEEE half-precision) tensor.
func ReadF16[B ~uint16](r io.ReaderAt, t TensorInfo, dst []B, buf []byte, finite bool) error {
	return read16(halfF16, r, t, dst, buf, finite)
}

// CheckFiniteBF16 returns an error wrapping [ErrNotFinite] naming the
// first element of x that is NaN or ±Inf (exponent bits all ones).
func CheckFiniteBF16[B ~uint16](x []B) error { return checkFinite16(halfBF16, x) }

// CheckFiniteF16 is [CheckFiniteBF16] for IEEE halves (exponent bits
// 0x7c00).
func CheckFiniteF16[B ~uint16](x []B) error { return checkFinite16(halfF16, x) }

// BF16View returns the BF16 tensor t as a view into the mapping (no copy)
// when its bytes start on a 2-byte boundary and the machine is
// little-endian, as safetensors stores them; ok is false otherwise (read
// it with ReadBF16 then).
func BF16View[B ~uint16](m *Mapping, t TensorInfo) (view []B, ok bool) {
	return view16[B](halfBF16, m, t)
}

// F16View is [BF16View] for an F16 tensor (read it with ReadF16 when ok
// is false).
func F16View[B ~uint16](m *Mapping, t TensorInfo) (view []B, ok bool) {
	return view16[B](halfF16, m, t)
}

func read16[B ~uint16](h half, r io.ReaderAt, t TensorInfo, dst []B, buf []byte, finite bool) error {
	if t.DType != h.dtype {
		return fmt.Errorf("safetensors: dtype %s read as %s; want a %s tensor", t.DType, h.dtype, h.dtype)
	}
	n := t.Elems()
	if len(dst) != n || int64(2*n) != t.End-t.Begin {
		return fmt.Errorf("safetensors: %s tensor of shape %v spans %d bytes; destination holds %d elements", h.dtype, t.Shape, t.End-t.Begin, len(dst))
	}
	if len(buf) < 2 {
		buf = make([]byte, min(chunk, max(2*n, 2)))
	}
	per := len(buf) / 2
	for i := 0; i < n; i += per {
		m := min(per, n-i)
		b := buf[:2*m]
		if _, err := r.ReadAt(b, t.Begin+int64(2*i)); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("safetensors: read bytes [%d, %d): %w", t.Begin+int64(2*i), t.Begin+int64(2*(i+m)), err)
		}
		out := dst[i : i+m]
		for j := range out {
			out[j] = B(binary.LittleEndian.Uint16(b[2*j:]))
		}
		if finite {
			if j, what, bad := firstNonFinite(h, out); bad {
				return fmt.Errorf("%w: element %d is %s", ErrNotFinite, i+j, what)
			}
		}
	}
	return nil
}

func checkFinite16[B ~uint16](h half, x []B) error {
	if i, what, bad := firstNonFinite(h, x); bad {
		return fmt.Errorf("%w: element %d is %s", ErrNotFinite, i, what)
	}
	return nil
}

func firstNonFinite[B ~uint16](h half, x []B) (int, string, bool) {
	exp, man := B(h.exp), B(h.man)
	for i, v := range x {
		if v&exp != exp {
			continue
		}
		switch {
		case v&man != 0:
			return i, "NaN", true
		case v&0x8000 != 0:
			return i, "-Inf", true
		}
		return i, "+Inf", true
	}
	return 0, "", false
}

func view16[B ~uint16](h half, m *Mapping, t TensorInfo) ([]B, bool) {
	if t.DType != h.dtype || t.Begin%2 != 0 || !littleEndian || t.End > int64(len(m.data)) {
		return nil, false
	}
	n := t.Elems()
	if n == 0 {
		return []B{}, true
	}
	return unsafe.Slice((*B)(unsafe.Pointer(&m.data[t.Begin])), n), true
}
