package safetensors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"unsafe"
)

// ReadBF16 reads the BF16 tensor t from r into dst (len(dst) must be
// t.Elems()) as stored, without widening, a chunk at a time through buf
// (allocated when nil or shorter than 2 bytes). With finite set, a NaN or
// ±Inf is an error wrapping [ErrNotFinite] that gives the element index.
func ReadBF16[B ~uint16](r io.ReaderAt, t TensorInfo, dst []B, buf []byte, finite bool) error {
	if t.DType != BF16 {
		return fmt.Errorf("safetensors: dtype %s read as BF16; want a BF16 tensor", t.DType)
	}
	n := t.Elems()
	if len(dst) != n || int64(2*n) != t.End-t.Begin {
		return fmt.Errorf("safetensors: BF16 tensor of shape %v spans %d bytes; destination holds %d elements", t.Shape, t.End-t.Begin, len(dst))
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
			if j, what, bad := firstNonFinite(out); bad {
				return fmt.Errorf("%w: element %d is %s", ErrNotFinite, i+j, what)
			}
		}
	}
	return nil
}

// CheckFiniteBF16 returns an error wrapping [ErrNotFinite] naming the
// first element of x that is NaN or ±Inf (exponent bits all ones).
func CheckFiniteBF16[B ~uint16](x []B) error {
	if i, what, bad := firstNonFinite(x); bad {
		return fmt.Errorf("%w: element %d is %s", ErrNotFinite, i, what)
	}
	return nil
}

func firstNonFinite[B ~uint16](x []B) (int, string, bool) {
	for i, v := range x {
		if v&0x7f80 != 0x7f80 {
			continue
		}
		switch {
		case v&0x7f != 0:
			return i, "NaN", true
		case v&0x8000 != 0:
			return i, "-Inf", true
		}
		return i, "+Inf", true
	}
	return 0, "", false
}

// Mapping is a safetensors file mapped read-only into memory, its
// tensors' bytes readable in place: the operating system pages them in
// when read and may drop them again (they are the file's), and every
// process mapping the file shares one copy. Views into it are valid until
// Close.
type Mapping struct {
	Header *Header
	data   []byte
	unmap  func() error
}

// Map maps the file at path read-only and checks its header. On systems
// without mmap the file is read into memory instead.
func Map(path string) (*Mapping, error) {
	data, unmap, err := mapFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: map %s: %w", path, err)
	}
	h, err := ReadHeader(bytesReaderAt(data), int64(len(data)))
	if err != nil {
		unmap()
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	return &Mapping{Header: h, data: data, unmap: unmap}, nil
}

// BF16View returns the BF16 tensor t as a view into the mapping (no copy) when
// its bytes start on a 2-byte boundary and the machine is little-endian,
// as safetensors stores them; ok is false otherwise (read it with
// ReadBF16 then).
func BF16View[B ~uint16](m *Mapping, t TensorInfo) (view []B, ok bool) {
	if t.DType != BF16 || t.Begin%2 != 0 || !littleEndian || t.End > int64(len(m.data)) {
		return nil, false
	}
	n := t.Elems()
	if n == 0 {
		return []B{}, true
	}
	return unsafe.Slice((*B)(unsafe.Pointer(&m.data[t.Begin])), n), true
}

// ReaderAt reads the mapped file.
func (m *Mapping) ReaderAt() io.ReaderAt { return bytesReaderAt(m.data) }

// Close unmaps the file; views into it must not be used afterwards.
func (m *Mapping) Close() error {
	if m.unmap == nil {
		return nil
	}
	err := m.unmap()
	m.unmap, m.data = nil, nil
	return err
}

type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(b)) {
		return 0, fmt.Errorf("offset %d outside the %d bytes", off, len(b))
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

var littleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()
