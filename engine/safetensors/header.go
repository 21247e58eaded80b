package safetensors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
)

// TensorInfo locates one tensor in a file without holding its bytes: its
// dtype, shape and the absolute file offsets [Begin, End) of its data.
type TensorInfo struct {
	DType      DType
	Shape      []int
	Begin, End int64
}

// Elems returns prod(Shape).
func (t TensorInfo) Elems() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Header is a file's parsed header: everything but the tensor data. It is
// checked as [Parse] checks a whole file (offsets inside the data, no
// overlaps, sizes matching shapes), against the file size given to
// [ReadHeader].
type Header struct {
	Metadata  map[string]string
	Tensors   map[string]TensorInfo
	DataStart int64 // file offset of the data section (8 + header length)
	Size      int64 // the file size the header was checked against
}

// Names returns the tensor names in sorted order.
func (h *Header) Names() []string {
	out := make([]string, 0, len(h.Tensors))
	for n := range h.Tensors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ReadHeader reads and checks the header of a file of size bytes through r
// (an *os.File), reading only the length field and the JSON header.
func ReadHeader(r io.ReaderAt, size int64) (*Header, error) {
	if size < 8 {
		return nil, bad("file has %d bytes; at least 8 (the header length) are needed", size)
	}
	var lb [8]byte
	if _, err := r.ReadAt(lb[:], 0); err != nil {
		return nil, fmt.Errorf("safetensors: read header length: %w", err)
	}
	hlen := binary.LittleEndian.Uint64(lb[:])
	if hlen > MaxHeader {
		return nil, bad("header length %d exceeds the limit of %d bytes", hlen, MaxHeader)
	}
	if hlen > uint64(size-8) {
		return nil, bad("header length %d exceeds the %d bytes after the length field (truncated file?)", hlen, size-8)
	}
	header := make([]byte, hlen)
	if _, err := r.ReadAt(header, 8); err != nil {
		return nil, fmt.Errorf("safetensors: read header: %w", err)
	}
	return parseHeader(header, size-8-int64(hlen))
}

// ErrNotFinite is wrapped by [ReadFloats] when a value is NaN or ±Inf.
var ErrNotFinite = errors.New("safetensors: value is not finite")

// ErrOverflow is wrapped by [EncodeFloats] when a finite value is too
// large for the dtype (it would round to an infinity).
var ErrOverflow = errors.New("safetensors: value overflows the dtype")

// chunk is the read size of ReadFloats: large enough for sequential
// throughput, small enough to stay in cache.
const chunk = 1 << 20

// ReadFloats reads the tensor t of a floating dtype (F16, BF16, F32, F64)
// from r straight into dst (len(dst) must be t.Elems()), a chunk at a time
// through buf (allocated when nil or shorter than 8 bytes), so no copy of
// the whole tensor is made. With finite set, a NaN or ±Inf is an error
// wrapping [ErrNotFinite] that gives the element index.
func ReadFloats[F ~float32 | ~float64](r io.ReaderAt, t TensorInfo, dst []F, buf []byte, finite bool) error {
	size := t.DType.Size()
	if !t.DType.IsFloat() {
		return fmt.Errorf("safetensors: dtype %s is not a floating type; want F16, BF16, F32 or F64", t.DType)
	}
	n := t.Elems()
	if len(dst) != n || int64(n*size) != t.End-t.Begin {
		return fmt.Errorf("safetensors: %s tensor of shape %v spans %d bytes; destination holds %d elements", t.DType, t.Shape, t.End-t.Begin, len(dst))
	}
	if len(buf) < 8 {
		buf = make([]byte, min(chunk, max(n*size, 8)))
	}
	per := len(buf) / size
	for i := 0; i < n; i += per {
		m := min(per, n-i)
		b := buf[:m*size]
		if _, err := r.ReadAt(b, t.Begin+int64(i*size)); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return fmt.Errorf("safetensors: read bytes [%d, %d): %w", t.Begin+int64(i*size), t.Begin+int64((i+m)*size), err)
		}
		out := dst[i : i+m]
		if err := DecodeFloats(t.DType, b, out); err != nil {
			return err
		}
		if finite {
			for j, v := range out {
				if f := float64(v); math.IsNaN(f) || math.IsInf(f, 0) {
					return fmt.Errorf("%w: element %d is %v", ErrNotFinite, i+j, f)
				}
			}
		}
	}
	return nil
}
