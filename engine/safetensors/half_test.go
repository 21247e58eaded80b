package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// halfFormat is one 16-bit dtype under test, with its reader, view and
// check, its rounding and its widening.
type halfFormat struct {
	dtype DType
	read  func(io.ReaderAt, TensorInfo, []uint16, []byte, bool) error
	view  func(*Mapping, TensorInfo) ([]uint16, bool)
	check func([]uint16) error
	round func(float32) uint16
	widen func(uint16) float32
	// NaN, +Inf and -Inf (another NaN payload, negative) in this format.
	nan, inf, negInf, negNaN uint16
}

var halfFormats = []halfFormat{
	{BF16, ReadBF16[uint16], BF16View[uint16], CheckFiniteBF16[uint16], F32ToBF16, BF16ToF32, 0x7fc0, 0x7f80, 0xff80, 0xffc1},
	{F16, ReadF16[uint16], F16View[uint16], CheckFiniteF16[uint16], F32ToF16, F16ToF32, 0x7e00, 0x7c00, 0xfc00, 0xfc01},
}

// rawFile writes a safetensors file by hand: a 1-byte U8 tensor "pad"
// first when odd, so that the 16-bit tensor "w" of dtype (the bits given)
// starts at an odd offset.
func rawFile(t *testing.T, dtype DType, bits []uint16, odd bool) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.safetensors")
	require.NoError(t, os.WriteFile(path, rawBytes(t, dtype, bits, odd), 0o644))
	return path
}

func rawBytes(t testing.TB, dtype DType, bits []uint16, odd bool) []byte {
	t.Helper()
	var data []byte
	header := map[string]any{}
	if odd {
		header["pad"] = map[string]any{"dtype": "U8", "shape": []int{1}, "data_offsets": []int{0, 1}}
		data = append(data, 7)
	}
	begin := len(data)
	for _, b := range bits {
		data = binary.LittleEndian.AppendUint16(data, b)
	}
	header["w"] = map[string]any{"dtype": string(dtype), "shape": []int{len(bits)}, "data_offsets": []int{begin, len(data)}}
	h, err := json.Marshal(header)
	require.NoError(t, err)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(file, h...), data...)
}

func (f halfFormat) bits(xs ...float32) []uint16 {
	out := make([]uint16, len(xs))
	for i, x := range xs {
		out[i] = f.round(x)
	}
	return out
}

// TestMapHalfView: a mapped file's aligned 16-bit tensor is a view equal
// to what the format's reader and ReadFloats read; an odd-aligned one is
// not viewable but the reader reads it through the mapping; the other
// format's view refuses it; Close ends the mapping.
func TestMapHalfView(t *testing.T) {
	t.Parallel()
	for i, f := range halfFormats {
		other := halfFormats[1-i]
		t.Run(string(f.dtype), func(t *testing.T) {
			t.Parallel()
			bits := f.bits(1, -2.5, 0.15625, 6e4, -1e-5)
			for _, odd := range []bool{false, true} {
				m, err := Map(rawFile(t, f.dtype, bits, odd))
				require.NoError(t, err)
				info := m.Header.Tensors["w"]
				view, ok := f.view(m, info)
				require.Equal(t, !odd, ok, "odd=%v", odd)
				if ok {
					assert.Equal(t, bits, view)
				}
				_, ok = other.view(m, info)
				assert.False(t, ok, "a %s view of a %s tensor", other.dtype, f.dtype)
				read := make([]uint16, len(bits))
				require.NoError(t, f.read(m.ReaderAt(), info, read, nil, true))
				assert.Equal(t, bits, read)
				fl := make([]float32, len(bits))
				require.NoError(t, ReadFloats(m.ReaderAt(), info, fl, nil, true))
				for i, b := range bits {
					assert.Equal(t, f.widen(b), fl[i])
				}
				require.NoError(t, m.Close())
				require.NoError(t, m.Close(), "a second Close is a no-op")
			}
		})
	}
}

func TestReadHalfErrors(t *testing.T) {
	t.Parallel()
	for i, f := range halfFormats {
		other := halfFormats[1-i]
		t.Run(string(f.dtype), func(t *testing.T) {
			t.Parallel()
			bits := f.bits(1, 2, 3)
			bits[1] = f.nan
			m, err := Map(rawFile(t, f.dtype, bits, false))
			require.NoError(t, err)
			defer m.Close()
			info := m.Header.Tensors["w"]
			err = f.read(m.ReaderAt(), info, make([]uint16, 3), nil, true)
			require.ErrorIs(t, err, ErrNotFinite)
			assert.Contains(t, err.Error(), "element 1 is NaN")
			require.NoError(t, f.read(m.ReaderAt(), info, make([]uint16, 3), nil, false), "finite not asked")
			assert.ErrorContains(t, f.read(m.ReaderAt(), info, make([]uint16, 2), nil, false), "destination holds 2 elements")
			f32 := TensorInfo{DType: F32, Shape: []int{1}, Begin: info.Begin, End: info.Begin + 4}
			assert.ErrorContains(t, f.read(m.ReaderAt(), f32, make([]uint16, 1), nil, false), "want a "+string(f.dtype)+" tensor")
			assert.ErrorContains(t, other.read(m.ReaderAt(), info, make([]uint16, 3), nil, false), "want a "+string(other.dtype)+" tensor")
			short := info
			short.End += 2
			short.Shape = []int{4}
			err = f.read(m.ReaderAt(), short, make([]uint16, 4), nil, false)
			assert.ErrorIs(t, err, io.ErrUnexpectedEOF)

			for _, c := range []struct {
				bits uint16
				what string
			}{{f.inf, "+Inf"}, {f.negInf, "-Inf"}, {f.negNaN, "NaN"}} {
				err := f.check([]uint16{f.round(1), c.bits})
				require.True(t, errors.Is(err, ErrNotFinite))
				assert.Contains(t, err.Error(), "element 1 is "+c.what)
			}
			assert.NoError(t, f.check([]uint16{f.round(6e4), 0x8000, 0x0001}), "large, negative zero and denormal values are finite")
		})
	}
}

// FuzzReadHalf: for any bits, each 16-bit reader returns them as stored
// (in chunks of any size), and with finite set it fails exactly when
// ReadFloats, which widens, finds a NaN or ±Inf, naming the same element.
func FuzzReadHalf(f *testing.F) {
	f.Add([]byte{0x80, 0x3f, 0x00, 0x7c}, uint8(0))
	f.Add([]byte{0xc0, 0x7f, 0x01, 0x00, 0x00, 0x80}, uint8(1))
	f.Add([]byte{0x00, 0xfc, 0x01, 0xff}, uint8(2))
	f.Fuzz(func(t *testing.T, raw []byte, bufLen uint8) {
		bits := make([]uint16, len(raw)/2)
		for i := range bits {
			bits[i] = binary.LittleEndian.Uint16(raw[2*i:])
		}
		for _, hf := range halfFormats {
			data := rawBytes(t, hf.dtype, bits, false)
			h, err := ReadHeader(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			info := h.Tensors["w"]
			got := make([]uint16, len(bits))
			if err := hf.read(bytes.NewReader(data), info, got, make([]byte, bufLen), false); err != nil {
				t.Fatalf("%s: %v", hf.dtype, err)
			}
			for i := range bits {
				if got[i] != bits[i] {
					t.Fatalf("%s: element %d read as %#04x; stored %#04x", hf.dtype, i, got[i], bits[i])
				}
			}
			errHalf := hf.read(bytes.NewReader(data), info, got, make([]byte, bufLen), true)
			errWide := ReadFloats(bytes.NewReader(data), info, make([]float64, len(bits)), nil, true)
			if (errHalf == nil) != (errWide == nil) || errHalf != nil && errHalf.Error() != errWide.Error() {
				t.Fatalf("%s: the reader says %v; ReadFloats says %v", hf.dtype, errHalf, errWide)
			}
			if errCheck := hf.check(bits); (errCheck == nil) != (errWide == nil) {
				t.Fatalf("%s: the check says %v; ReadFloats says %v", hf.dtype, errCheck, errWide)
			}
			for _, b := range bits {
				if w := hf.widen(b); !math.IsNaN(float64(w)) && hf.round(w) != b {
					t.Fatalf("%s: %#04x widens to %v, which rounds to %#04x", hf.dtype, b, w, hf.round(w))
				}
			}
		}
	})
}

func TestMapRejectsBadFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.safetensors")
	require.NoError(t, os.WriteFile(bad, []byte{1, 2, 3}, 0o644))
	_, err := Map(bad)
	assert.ErrorContains(t, err, "at least 8")
	_, err = Map(filepath.Join(dir, "missing.safetensors"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
