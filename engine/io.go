package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"unsafe"

	"github.com/tandemrl/tandem/engine/safetensors"
)

// Metadata keys in files the engine writes.
const (
	metaConfig = "tandem_config" // the model's Config as JSON
	metaLora   = "tandem_lora"   // the adapter's LoraConfig as JSON
	metaStep   = "tandem_step"   // the optimizer step
	metaMode   = "tandem_mode"   // "lora" or "full"
)

// dtypeOf is the safetensors dtype that holds T exactly.
func dtypeOf[T Float]() safetensors.DType {
	var z T
	if unsafe.Sizeof(z) == 4 {
		return safetensors.F32
	}
	return safetensors.F64
}

func encodeT[T Float](name string, shape []int, data []T, dtype safetensors.DType) (safetensors.Named, error) {
	x := make([]float64, len(data))
	for i, v := range data {
		x[i] = float64(v)
	}
	t, err := safetensors.FromFloats(dtype, shape, x)
	return safetensors.Named{Name: name, Tensor: t}, err
}

// expected is one tensor a reader requires.
type expected[T Float] struct {
	name  string
	shape []int
	dst   []T
}

// readTensors fills every expected tensor from f, checking that the file
// holds exactly these names with these shapes, a floating dtype and finite
// values.
func readTensors[T Float](f *safetensors.File, want []expected[T], what string) error {
	seen := map[string]bool{}
	for _, w := range want {
		seen[w.name] = true
		t, ok := f.Tensors[w.name]
		if !ok {
			return fmt.Errorf("%w: %s: tensor %q is missing", ErrShape, what, w.name)
		}
		if !slices.Equal(t.Shape, w.shape) {
			return fmt.Errorf("%w: %s: tensor %q has shape %v; the model needs %v", ErrShape, what, w.name, t.Shape, w.shape)
		}
		x, err := t.Floats64()
		if err != nil {
			return fmt.Errorf("%w: %s: tensor %q: %v", ErrShape, what, w.name, err)
		}
		for i, v := range x {
			if !isFinite(v) {
				return fmt.Errorf("%w: %s: tensor %q element %d is %v", ErrShape, what, w.name, i, v)
			}
			w.dst[i] = T(v)
		}
	}
	var extra []string
	for n := range f.Tensors {
		if !seen[n] {
			extra = append(extra, n)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return fmt.Errorf("%w: %s: unexpected tensors %v", ErrShape, what, extra)
	}
	return nil
}

// SaveBase writes m to path as safetensors with Hugging Face Llama tensor
// names, its Config in the metadata, elements stored as dtype (F32, F64, or
// F16/BF16 for a compact file). The write is atomic.
func SaveBase[T Float](path string, m *Model[T], dtype safetensors.DType) error {
	m = m.Widen()
	cj, err := json.Marshal(m.Config)
	if err != nil {
		return err
	}
	var ts []safetensors.Named
	for _, t := range m.tensors() {
		n, err := encodeT(t.Name, t.Shape, t.Data, dtype)
		if err != nil {
			return err
		}
		ts = append(ts, n)
	}
	return safetensors.WriteFile(path, ts, map[string]string{"format": "pt", metaConfig: string(cj)})
}

// ParseBase decodes a base model written by [SaveBase]. It checks the
// config, every tensor's name and shape, and that values are finite.
func ParseBase[T Float](data []byte) (*Model[T], error) {
	f, err := safetensors.Parse(data)
	if err != nil {
		return nil, err
	}
	raw, ok := f.Metadata[metaConfig]
	if !ok {
		return nil, fmt.Errorf("%w: base model: metadata has no %q (not written by tandem?)", ErrShape, metaConfig)
	}
	var cfg Config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return nil, fmt.Errorf("%w: base model: metadata %s: %v", ErrShape, metaConfig, err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("base model: %w", err)
	}
	m := newZeroModel[T](cfg)
	var want []expected[T]
	for _, t := range m.tensors() {
		want = append(want, expected[T]{t.Name, t.Shape, t.Data})
	}
	if err := readTensors(f, want, "base model"); err != nil {
		return nil, err
	}
	return m, nil
}

// LoadBase reads a base model file written by [SaveBase].
func LoadBase[T Float](path string) (*Model[T], error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m, err := ParseBase[T](data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}
