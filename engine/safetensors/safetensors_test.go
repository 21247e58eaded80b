package safetensors

import (
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sample(t *testing.T) []Named {
	t.Helper()
	var out []Named
	x := []float64{1, -2.5, 0.125, 3e-3, 65504, -0}
	for _, dt := range []DType{F16, BF16, F32, F64} {
		tn, err := FromFloats(dt, []int{2, 3}, x)
		require.NoError(t, err)
		out = append(out, Named{Name: "w." + string(dt), Tensor: tn})
	}
	ti, err := FromInts([]int{3}, []int64{-1, 0, 1 << 40})
	require.NoError(t, err)
	return append(out, Named{Name: "step", Tensor: ti})
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	in := sample(t)
	path := filepath.Join(t.TempDir(), "m.safetensors")
	require.NoError(t, WriteFile(path, in, map[string]string{"format": "pt"}))
	f, err := ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "pt", f.Metadata["format"])
	require.Len(t, f.Tensors, len(in))
	for _, n := range in {
		got := f.Tensors[n.Name]
		assert.Equal(t, n.DType, got.DType, n.Name)
		assert.Equal(t, n.Shape, got.Shape, n.Name)
		assert.Equal(t, n.Data, got.Data, n.Name)
	}
	v, err := f.Tensors["w.F64"].Floats64()
	require.NoError(t, err)
	assert.Equal(t, []float64{1, -2.5, 0.125, 3e-3, 65504, 0}, v)
	i, err := f.Tensors["step"].Ints64()
	require.NoError(t, err)
	assert.Equal(t, []int64{-1, 0, 1 << 40}, i)
	// Header length keeps the data 8-byte aligned.
	b, err := Encode(in, nil)
	require.NoError(t, err)
	assert.Zero(t, (8+binary.LittleEndian.Uint64(b))%8)
}

func TestF16AllValuesRoundTrip(t *testing.T) {
	t.Parallel()
	for h := 0; h < 1<<16; h++ {
		f := F16ToF32(uint16(h))
		if f != f {
			assert.True(t, math.IsNaN(float64(F16ToF32(F32ToF16(f)))))
			continue
		}
		require.Equal(t, uint16(h), F32ToF16(f), "half %#04x = %v", h, f)
	}
}

func TestF16RoundsToNearest(t *testing.T) {
	t.Parallel()
	// Between consecutive halves a and b, values round to the nearer, ties
	// to the even one.
	for h := uint16(0x0001); h < 0x7bff; h += 97 {
		a, b := float64(F16ToF32(h)), float64(F16ToF32(h+1))
		below := float32(a + (b-a)*0.25)
		above := float32(a + (b-a)*0.75)
		mid := float32((a + b) / 2)
		assert.Equal(t, h, F32ToF16(below))
		assert.Equal(t, h+1, F32ToF16(above))
		want := h
		if h&1 == 1 {
			want = h + 1
		}
		assert.Equal(t, want, F32ToF16(mid), "tie at %v", mid)
	}
	assert.Equal(t, uint16(0x7c00), F32ToF16(1e6), "overflow is +Inf")
}

func TestBF16(t *testing.T) {
	t.Parallel()
	for _, f := range []float32{1, -3.5, 1e-20, 3e38} {
		got := math.Float32frombits(uint32(F32ToBF16(f)) << 16)
		assert.InEpsilon(t, f, got, 1.0/128)
	}
	assert.Equal(t, uint16(0x3f80), F32ToBF16(1))
	// 1 + 2⁻⁸ is the tie between 1 and 1 + 2⁻⁷: rounds to even (1).
	assert.Equal(t, uint16(0x3f80), F32ToBF16(1+1.0/256))
}

func file(header string, body int) []byte {
	b := make([]byte, 8, 8+len(header)+body)
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	b = append(b, header...)
	return append(b, make([]byte, body)...)
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
	huge := make([]byte, 8)
	binary.LittleEndian.PutUint64(huge, MaxHeader+1)
	good, err := Encode(sample(t), nil)
	require.NoError(t, err)
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "at least 8"},
		{"header too large", huge, "exceeds the limit"},
		{"truncated header", good[:20], "exceeds the"},
		{"truncated data", good[:len(good)-3], "outside"},
		{"not json", file("{nope", 0), "not a JSON object"},
		{"json array", file("[]", 0), "not a JSON object"},
		{"bad dtype", file(`{"a":{"dtype":"F8","shape":[1],"data_offsets":[0,1]}}`, 1), "unsupported"},
		{"one offset", file(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0]}}`, 1), "data_offsets"},
		{"offset past end", file(`{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}`, 2), "outside"},
		{"reversed offsets", file(`{"a":{"dtype":"U8","shape":[0],"data_offsets":[2,1]}}`, 2), "outside"},
		{"size mismatch", file(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 4), "needs 8 bytes"},
		{"negative dim", file(`{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}}`, 0), "impossible"},
		{"overflowing shape", file(`{"a":{"dtype":"U8","shape":[4,4611686018427387904],"data_offsets":[0,4]}}`, 4), "impossible"},
		{"overlap", file(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`, 3), "overlap"},
		{"unknown field", file(`{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"x":1}}`, 1), "unknown field"},
		{"bad metadata", file(`{"__metadata__":{"a":1}}`, 0), "__metadata__"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse(tc.data)
			require.ErrorIs(t, err, ErrFormat)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestEncodeRejects(t *testing.T) {
	t.Parallel()
	_, err := Encode([]Named{{Name: "a", Tensor: Tensor{DType: F32, Shape: []int{2}, Data: make([]byte, 4)}}}, nil)
	assert.ErrorContains(t, err, "needs 8 bytes")
	_, err = Encode([]Named{{Name: "a", Tensor: Tensor{DType: U8, Shape: []int{1}, Data: []byte{1}}}, {Name: "a", Tensor: Tensor{DType: U8, Shape: []int{1}, Data: []byte{1}}}}, nil)
	assert.ErrorContains(t, err, "twice")
}

func FuzzParse(f *testing.F) {
	good, err := Encode([]Named{{Name: "a", Tensor: Tensor{DType: F32, Shape: []int{2}, Data: make([]byte, 8)}}}, map[string]string{"k": "v"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(file(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},"b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}}`, 3))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		fl, err := Parse(data)
		if err != nil {
			return
		}
		// Whatever parses must be self-consistent and re-encode.
		var ts []Named
		for name, tn := range fl.Tensors {
			if tn.Elems()*tn.DType.Size() != len(tn.Data) {
				t.Fatalf("tensor %q: %d bytes for shape %v", name, len(tn.Data), tn.Shape)
			}
			if tn.DType != U8 && tn.DType != I32 && tn.DType != I64 {
				if _, err := tn.Floats64(); err != nil {
					t.Fatal(err)
				}
			}
			ts = append(ts, Named{Name: name, Tensor: tn})
		}
		b, err := Encode(ts, fl.Metadata)
		if err != nil {
			return // e.g. a name Encode refuses
		}
		if _, err := Parse(b); err != nil {
			t.Fatalf("re-encoded file does not parse: %v", err)
		}
	})
}

func TestReadHeaderAndFloats(t *testing.T) {
	t.Parallel()
	x := []float64{1, -2.5, 3e-3, 6e4, 0, math.Copysign(0, -1), 65504}
	var ts []Named
	for _, dt := range []DType{F16, BF16, F32, F64} {
		tn, err := FromFloats(dt, []int{len(x)}, x)
		require.NoError(t, err)
		ts = append(ts, Named{Name: string(dt), Tensor: tn})
	}
	ts = append(ts, Named{Name: "ints", Tensor: Tensor{DType: I32, Shape: []int{1}, Data: make([]byte, 4)}})
	data, err := Encode(ts, map[string]string{"format": "pt"})
	require.NoError(t, err)
	whole, err := Parse(data)
	require.NoError(t, err)
	h, err := ReadHeader(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	assert.Equal(t, whole.Metadata, h.Metadata)
	assert.Equal(t, whole.Names(), h.Names())
	for _, dt := range []DType{F16, BF16, F32, F64} {
		ti := h.Tensors[string(dt)]
		want, err := whole.Tensors[string(dt)].Floats64()
		require.NoError(t, err)
		for _, bufLen := range []int{0, 8, 16, 1 << 10} { // chunked and whole
			got := make([]float64, len(x))
			require.NoError(t, ReadFloats(bytes.NewReader(data), ti, got, make([]byte, bufLen), true))
			assert.Equal(t, want, got, "%s buf %d", dt, bufLen)
			g32 := make([]float32, len(x))
			require.NoError(t, ReadFloats(bytes.NewReader(data), ti, g32, nil, false))
			for i := range want {
				assert.Equal(t, float32(want[i]), g32[i])
			}
		}
	}
	assert.ErrorContains(t, ReadFloats(bytes.NewReader(data), h.Tensors["ints"], make([]float32, 1), nil, true), "not a floating type")
	assert.ErrorContains(t, ReadFloats(bytes.NewReader(data), h.Tensors["F32"], make([]float32, 2), nil, true), "destination holds 2")
	// Not finite, and a file cut short after the header was read.
	bad, err := FromFloats(F32, []int{3}, []float64{1, math.Inf(1), 2})
	require.NoError(t, err)
	data, err = Encode([]Named{{Name: "t", Tensor: bad}}, nil)
	require.NoError(t, err)
	h, err = ReadHeader(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	err = ReadFloats(bytes.NewReader(data), h.Tensors["t"], make([]float64, 3), nil, true)
	assert.ErrorIs(t, err, ErrNotFinite)
	assert.ErrorContains(t, err, "element 1 is +Inf")
	err = ReadFloats(bytes.NewReader(data[:len(data)-2]), h.Tensors["t"], make([]float64, 3), nil, false)
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF)
	_, err = ReadHeader(bytes.NewReader(data[:len(data)-2]), int64(len(data)-2))
	assert.ErrorIs(t, err, ErrFormat)
}

func TestEncodeDecodeFloats(t *testing.T) {
	t.Parallel()
	x := []float32{1, -0.5, 3.14159, 1e-8}
	for _, dt := range []DType{F16, BF16, F32, F64} {
		b, err := EncodeFloats(dt, x)
		require.NoError(t, err)
		tn := Tensor{DType: dt, Shape: []int{len(x)}, Data: b}
		want, err := tn.Floats64()
		require.NoError(t, err)
		got := make([]float64, len(x))
		require.NoError(t, DecodeFloats(dt, b, got))
		assert.Equal(t, want, got, dt)
	}
	_, err := EncodeFloats(I64, x)
	assert.Error(t, err)
	assert.Error(t, DecodeFloats(F32, make([]byte, 3), make([]float32, 1)))
}

// FuzzReadHeader: ReadHeader accepts exactly what Parse accepts, with the
// same tensors.
func FuzzReadHeader(f *testing.F) {
	good, err := Encode([]Named{{Name: "a", Tensor: Tensor{DType: F32, Shape: []int{2}, Data: make([]byte, 8)}}}, map[string]string{"k": "v"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(file(`{"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}`, 3))
	f.Fuzz(func(t *testing.T, data []byte) {
		whole, err1 := Parse(data)
		h, err2 := ReadHeader(bytes.NewReader(data), int64(len(data)))
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("Parse: %v; ReadHeader: %v", err1, err2)
		}
		if err1 != nil {
			return
		}
		for name, tn := range whole.Tensors {
			ti := h.Tensors[name]
			if string(data[ti.Begin:ti.End]) != string(tn.Data) || ti.DType != tn.DType {
				t.Fatalf("tensor %q differs", name)
			}
		}
	})
}

// TestEncodeFloatsOverflow: a finite value past a dtype's range is an
// error naming it, not a silent infinity; the largest finite values, the
// ones that round down to them, and infinities and NaNs encode.
func TestEncodeFloatsOverflow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dt       DType
		fits     []float64
		overflow float64
	}{
		{F16, []float64{65504, 65519.99, -65504, math.Inf(1), math.NaN()}, 65520},
		{BF16, []float64{3.3895313892515355e38, math.Inf(-1)}, 3.3961775292304957e38},
		{F32, []float64{math.MaxFloat32, math.Inf(1)}, 3.5e38},
	} {
		_, err := EncodeFloats(c.dt, c.fits)
		require.NoError(t, err, c.dt)
		_, err = EncodeFloats(c.dt, []float64{1, -c.overflow})
		require.ErrorIs(t, err, ErrOverflow, c.dt)
		assert.ErrorContains(t, err, "element 1 is", c.dt)
	}
	_, err := EncodeFloats(F64, []float64{math.MaxFloat64})
	require.NoError(t, err)
}
