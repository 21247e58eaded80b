package safetensors

import (
	"fmt"
	"io"
	"unsafe"
)

// Mapping is a safetensors file mapped read-only into memory, its
// tensors' bytes readable in place: the operating system pages them in
// when read and may drop them again (they are the file's), and every
// process mapping the file shares one copy. Views into it ([BF16View],
// [F16View]) are valid until Close.
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
