package safetensors

import (
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

// rawFile writes a safetensors file by hand: a 1-byte U8 tensor "pad"
// first when odd, so that the BF16 tensor "w" (the bits given) starts at
// an odd offset.
func rawFile(t *testing.T, bits []uint16, odd bool) string {
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
	header["w"] = map[string]any{"dtype": "BF16", "shape": []int{len(bits)}, "data_offsets": []int{begin, len(data)}}
	h, err := json.Marshal(header)
	require.NoError(t, err)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	file = append(append(file, h...), data...)
	path := filepath.Join(t.TempDir(), "m.safetensors")
	require.NoError(t, os.WriteFile(path, file, 0o644))
	return path
}

func bf16Bits(xs ...float32) []uint16 {
	out := make([]uint16, len(xs))
	for i, x := range xs {
		out[i] = F32ToBF16(x)
	}
	return out
}

// TestMapBF16View: a mapped file's aligned BF16 tensor is a view equal to
// what ReadBF16 and ReadFloats read; an odd-aligned one is not viewable
// but ReadBF16 reads it through the mapping; Close ends the mapping.
func TestMapBF16View(t *testing.T) {
	t.Parallel()
	bits := bf16Bits(1, -2.5, 0.15625, 3e38, -1e-30)
	for _, odd := range []bool{false, true} {
		path := rawFile(t, bits, odd)
		m, err := Map(path)
		require.NoError(t, err)
		info := m.Header.Tensors["w"]
		view, ok := BF16View[uint16](m, info)
		require.Equal(t, !odd, ok, "odd=%v", odd)
		if ok {
			assert.Equal(t, bits, view)
		}
		read := make([]uint16, len(bits))
		require.NoError(t, ReadBF16(m.ReaderAt(), info, read, nil, true))
		assert.Equal(t, bits, read)
		f := make([]float32, len(bits))
		require.NoError(t, ReadFloats(m.ReaderAt(), info, f, nil, true))
		for i, b := range bits {
			assert.Equal(t, math.Float32frombits(uint32(b)<<16), f[i])
		}
		require.NoError(t, m.Close())
		require.NoError(t, m.Close(), "a second Close is a no-op")
	}
}

func TestReadBF16Errors(t *testing.T) {
	t.Parallel()
	bits := bf16Bits(1, 2, 3)
	bits[1] = 0x7fc0 // NaN
	m, err := Map(rawFile(t, bits, false))
	require.NoError(t, err)
	defer m.Close()
	info := m.Header.Tensors["w"]
	err = ReadBF16(m.ReaderAt(), info, make([]uint16, 3), nil, true)
	require.ErrorIs(t, err, ErrNotFinite)
	assert.Contains(t, err.Error(), "element 1 is NaN")
	require.NoError(t, ReadBF16(m.ReaderAt(), info, make([]uint16, 3), nil, false), "finite not asked")
	assert.ErrorContains(t, ReadBF16(m.ReaderAt(), info, make([]uint16, 2), nil, false), "destination holds 2 elements")
	f32 := TensorInfo{DType: F32, Shape: []int{1}, Begin: info.Begin, End: info.Begin + 4}
	assert.ErrorContains(t, ReadBF16(m.ReaderAt(), f32, make([]uint16, 1), nil, false), "want a BF16 tensor")
	short := info
	short.End += 2
	short.Shape = []int{4}
	err = ReadBF16(m.ReaderAt(), short, make([]uint16, 4), nil, false)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)

	for _, c := range []struct {
		bits uint16
		what string
	}{{0x7f80, "+Inf"}, {0xff80, "-Inf"}, {0xffc1, "NaN"}} {
		err := CheckFiniteBF16([]uint16{F32ToBF16(1), c.bits})
		require.True(t, errors.Is(err, ErrNotFinite))
		assert.Contains(t, err.Error(), "element 1 is "+c.what)
	}
	assert.NoError(t, CheckFiniteBF16([]uint16{F32ToBF16(3e38), 0x8000, 0x0001}), "large, negative zero and denormal values are finite")
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
