// Package safetensors reads and writes the safetensors file format: an
// 8-byte little-endian header length N, N bytes of JSON header
// {name: {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__":
// {string: string}}, then the tensors' raw little-endian bytes, offsets
// relative to the end of the header.
//
// The reader trusts nothing: it bounds the header size, requires every
// offset pair to lie inside the data, not to overlap another, and to hold
// exactly prod(shape)·size(dtype) bytes. Supported dtypes: F16, BF16, F32,
// F64, I64 (and I32 and U8 as raw bytes).
package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/tandemrl/tandem/internal/atomicfile"
)

// DType is a tensor element type.
type DType string

// Supported dtypes.
const (
	F16  DType = "F16"
	BF16 DType = "BF16"
	F32  DType = "F32"
	F64  DType = "F64"
	I64  DType = "I64"
	I32  DType = "I32"
	U8   DType = "U8"
)

// Size returns the bytes per element, 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case F16, BF16:
		return 2
	case F32, I32:
		return 4
	case F64, I64:
		return 8
	case U8:
		return 1
	}
	return 0
}

// MaxHeader is the largest header the reader accepts (100 MB, as the
// reference implementation).
const MaxHeader = 100 << 20

// ErrFormat is wrapped by every error about a malformed file.
var ErrFormat = errors.New("safetensors: malformed file")

// Tensor is one tensor: its dtype, shape and raw little-endian bytes. Data
// returned by Parse aliases the parsed buffer.
type Tensor struct {
	DType DType
	Shape []int
	Data  []byte
}

// Elems returns prod(Shape).
func (t Tensor) Elems() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is a parsed safetensors file.
type File struct {
	Metadata map[string]string
	Tensors  map[string]Tensor
}

// Names returns the tensor names in sorted order.
func (f *File) Names() []string {
	out := make([]string, 0, len(f.Tensors))
	for n := range f.Tensors {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

type entry struct {
	DType   DType   `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Offsets []int64 `json:"data_offsets"`
}

func bad(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, a...))
}

// Parse decodes a whole file held in data. The returned tensors alias data.
func Parse(data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, bad("file has %d bytes; at least 8 (the header length) are needed", len(data))
	}
	hlen := binary.LittleEndian.Uint64(data[:8])
	if hlen > MaxHeader {
		return nil, bad("header length %d exceeds the limit of %d bytes", hlen, MaxHeader)
	}
	if hlen > uint64(len(data)-8) {
		return nil, bad("header length %d exceeds the %d bytes after the length field (truncated file?)", hlen, len(data)-8)
	}
	body := data[8+hlen:]
	h, err := parseHeader(data[8:8+hlen], int64(len(body)))
	if err != nil {
		return nil, err
	}
	f := &File{Metadata: h.Metadata, Tensors: make(map[string]Tensor, len(h.Tensors))}
	for name, e := range h.Tensors {
		b, en := e.Begin-h.DataStart, e.End-h.DataStart
		f.Tensors[name] = Tensor{DType: e.DType, Shape: e.Shape, Data: body[b:en:en]}
	}
	return f, nil
}

// parseHeader decodes and checks the JSON header of a file whose data
// section (after the header) holds bodyLen bytes. Offsets in the result are
// absolute file offsets.
func parseHeader(header []byte, bodyLen int64) (*Header, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(header, &raw); err != nil {
		return nil, bad("header is not a JSON object: %v", err)
	}
	start := 8 + int64(len(header))
	h := &Header{Metadata: map[string]string{}, Tensors: map[string]TensorInfo{}, DataStart: start, Size: start + bodyLen}
	type span struct {
		b, e int64
		name string
	}
	var spans []span
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &h.Metadata); err != nil {
				return nil, bad("__metadata__ must map strings to strings: %v", err)
			}
			continue
		}
		var e entry
		dec := json.NewDecoder(strings.NewReader(string(msg)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, bad("tensor %q: %v", name, err)
		}
		size := e.DType.Size()
		if size == 0 {
			return nil, bad("tensor %q: dtype %q unsupported; want one of F16, BF16, F32, F64, I64, I32, U8", name, e.DType)
		}
		if len(e.Offsets) != 2 {
			return nil, bad("tensor %q: data_offsets has %d values; want [begin, end]", name, len(e.Offsets))
		}
		b, en := e.Offsets[0], e.Offsets[1]
		if b < 0 || en < b || en > bodyLen {
			return nil, bad("tensor %q: data_offsets [%d, %d] outside the %d data bytes (truncated file?)", name, b, en, bodyLen)
		}
		elems := int64(1)
		shape := make([]int, len(e.Shape))
		for i, d := range e.Shape {
			if d < 0 || d > bodyLen {
				return nil, bad("tensor %q: shape %v has an impossible dimension %d", name, e.Shape, d)
			}
			if d != 0 && elems > bodyLen/d {
				return nil, bad("tensor %q: shape %v holds more elements than the file has bytes", name, e.Shape)
			}
			elems *= d
			shape[i] = int(d)
		}
		if elems*int64(size) != en-b {
			return nil, bad("tensor %q: shape %v of %s needs %d bytes but data_offsets span %d", name, e.Shape, e.DType, elems*int64(size), en-b)
		}
		h.Tensors[name] = TensorInfo{DType: e.DType, Shape: shape, Begin: start + b, End: start + en}
		spans = append(spans, span{b, en, name})
	}
	slices.SortFunc(spans, func(x, y span) int {
		if x.b != y.b {
			return int(x.b - y.b)
		}
		return strings.Compare(x.name, y.name)
	})
	for i := 1; i < len(spans); i++ {
		if spans[i].b < spans[i-1].e {
			return nil, bad("tensors %q and %q overlap", spans[i-1].name, spans[i].name)
		}
	}
	return h, nil
}

// ReadFile reads and parses the file at path.
func ReadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Named is a tensor to write under a name.
type Named struct {
	Name string
	Tensor
}

// Encode returns the file holding tensors (in name order, 8-byte aligned
// data) and metadata. Names must be unique and non-empty, and each tensor's
// data must match its shape and dtype.
func Encode(tensors []Named, metadata map[string]string) ([]byte, error) {
	ts := slices.Clone(tensors)
	slices.SortFunc(ts, func(a, b Named) int { return strings.Compare(a.Name, b.Name) })
	header := map[string]any{}
	if len(metadata) > 0 {
		header["__metadata__"] = metadata
	}
	var off int64
	for i, t := range ts {
		switch {
		case t.Name == "" || t.Name == "__metadata__":
			return nil, fmt.Errorf("safetensors: tensor name %q is not allowed", t.Name)
		case i > 0 && ts[i-1].Name == t.Name:
			return nil, fmt.Errorf("safetensors: tensor name %q appears twice", t.Name)
		case t.DType.Size() == 0:
			return nil, fmt.Errorf("safetensors: tensor %q: dtype %q unsupported", t.Name, t.DType)
		case t.Elems()*t.DType.Size() != len(t.Data):
			return nil, fmt.Errorf("safetensors: tensor %q: shape %v of %s needs %d bytes, have %d", t.Name, t.Shape, t.DType, t.Elems()*t.DType.Size(), len(t.Data))
		}
		shape := t.Shape
		if shape == nil {
			shape = []int{}
		}
		header[t.Name] = map[string]any{"dtype": t.DType, "shape": shape, "data_offsets": []int64{off, off + int64(len(t.Data))}}
		off += int64(len(t.Data))
	}
	hj, err := json.Marshal(header)
	if err != nil {
		return nil, err
	}
	for (8+len(hj))%8 != 0 {
		hj = append(hj, ' ')
	}
	out := make([]byte, 8, 8+len(hj)+int(off))
	binary.LittleEndian.PutUint64(out, uint64(len(hj)))
	out = append(out, hj...)
	for _, t := range ts {
		out = append(out, t.Data...)
	}
	return out, nil
}

// Write encodes tensors and metadata to w.
func Write(w io.Writer, tensors []Named, metadata map[string]string) error {
	b, err := Encode(tensors, metadata)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// WriteFile writes the file atomically: to a temporary file in the same
// folder, synced, then renamed over path.
func WriteFile(path string, tensors []Named, metadata map[string]string) error {
	b, err := Encode(tensors, metadata)
	if err != nil {
		return err
	}
	return atomicfile.Write(path, b)
}
