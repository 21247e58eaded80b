package engine

import (
	"fmt"
	"io"

	"github.com/tandemrl/tandem/engine/kernels"
)

// MatricesBF16 are a model's weight matrices kept in bfloat16, the
// precision most real checkpoints are stored in: the embedding, every
// projection and the unembedding (nil when tied), row-major [out, in] as
// in [Block]. The norms and biases stay in the Model's []T fields.
//
// Such a model is a frozen base: LoRA trainers train over it and samplers
// sample it, with every product computed from the 16-bit weights directly
// (kernels.Par.SgemmBF16, accumulating in float32, each activation split
// into a bfloat16 high part and a bfloat16 remainder, which keeps 16 of
// its significant bits: on CPUs with AMX-BF16 every product runs on the
// tile unit; with AVX512_BF16 alone the sampling step's products run
// VDPBF16PS and larger ones widen the weights to float32 a block at a
// time, as every product does elsewhere). A full-parameter trainer
// refuses it; [Merge], [SaveBase] and [ConvertModel] work on its widened
// copy ([Model.Widen]).
type MatricesBF16 struct {
	Embed   []kernels.BF16 // Vocab×Dim
	Unembed []kernels.BF16 // Vocab×Dim; nil when Config.TiedEmbed
	Blocks  []BlockBF16
	// Keep is what the slices are views into (a memory-mapped checkpoint),
	// closed by [Model.Close]; nil when they were allocated.
	Keep io.Closer
}

// BlockBF16 is one block's matrices in bfloat16 (shapes as in [Block]).
type BlockBF16 struct {
	Q, K, V, O, Gate, Up, Down []kernels.BF16
}

// TensorBF16 is one bfloat16 matrix of a model under its Hugging Face name:
// Data points at the model's field, for a loader to fill (allocated or a
// view of a mapped file).
type TensorBF16 struct {
	Name  string
	Shape []int
	Data  *[]kernels.BF16
}

// NewZeroModelBF16 returns a model of cfg whose matrices are to be kept in
// bfloat16: the norms and biases zero []T (filled through
// [Model.Tensors]), the matrices unset (set through [Model.TensorsBF16]),
// then checked by [Model.CheckBF16].
func NewZeroModelBF16[T Float](cfg Config) (*Model[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := newZeroModel[T](cfg)
	m.Embed, m.Unembed = nil, nil
	for i := range m.Blocks {
		b := &m.Blocks[i]
		b.Q, b.K, b.V, b.O, b.Gate, b.Up, b.Down = nil, nil, nil, nil, nil, nil, nil
	}
	m.BF16 = &MatricesBF16{Blocks: make([]BlockBF16, cfg.Layers)}
	return m, nil
}

// TensorsBF16 lists a bfloat16 model's matrices in the order of
// [Model.Tensors] (nil for a model in []T).
func (m *Model[T]) TensorsBF16() []TensorBF16 {
	s := m.BF16
	if s == nil {
		return nil
	}
	c := m.Config
	d, h, v, q, kv := c.Dim, c.Hidden, c.Vocab, c.QDim(), c.KVDim()
	out := []TensorBF16{{"model.embed_tokens.weight", []int{v, d}, &s.Embed}}
	for i := range s.Blocks {
		b := &s.Blocks[i]
		p := fmt.Sprintf("model.layers.%d.", i)
		out = append(out,
			TensorBF16{p + "self_attn.q_proj.weight", []int{q, d}, &b.Q},
			TensorBF16{p + "self_attn.k_proj.weight", []int{kv, d}, &b.K},
			TensorBF16{p + "self_attn.v_proj.weight", []int{kv, d}, &b.V},
			TensorBF16{p + "self_attn.o_proj.weight", []int{d, q}, &b.O},
			TensorBF16{p + "mlp.gate_proj.weight", []int{h, d}, &b.Gate},
			TensorBF16{p + "mlp.up_proj.weight", []int{h, d}, &b.Up},
			TensorBF16{p + "mlp.down_proj.weight", []int{d, h}, &b.Down},
		)
	}
	if !c.TiedEmbed {
		out = append(out, TensorBF16{"lm_head.weight", []int{v, d}, &s.Unembed})
	}
	return out
}

// CheckBF16 reports a bfloat16 matrix that is unset or of the wrong
// length (nil for a model in []T).
func (m *Model[T]) CheckBF16() error {
	for _, t := range m.TensorsBF16() {
		want := 1
		for _, d := range t.Shape {
			want *= d
		}
		if len(*t.Data) != want {
			return fmt.Errorf("%w: %s holds %d bfloat16 values; shape %v needs %d", ErrShape, t.Name, len(*t.Data), t.Shape, want)
		}
	}
	return nil
}

// IsBF16 reports whether m keeps its matrices in bfloat16.
func (m *Model[T]) IsBF16() bool { return m.BF16 != nil }

// Widen returns m with its matrices in T: m itself when they are, else a
// copy with every bfloat16 matrix widened (exactly) and the norms and
// biases copied.
func (m *Model[T]) Widen() *Model[T] {
	if m.BF16 == nil {
		return m
	}
	c := newZeroModel[T](m.Config)
	src, dst := m.tensors(), c.tensors()
	j := 0
	for _, t := range dst {
		if j < len(src) && src[j].Name == t.Name {
			copy(t.Data, src[j].Data)
			j++
		}
	}
	byName := map[string][]T{}
	for _, t := range dst {
		byName[t.Name] = t.Data
	}
	for _, t := range m.TensorsBF16() {
		widenInto(byName[t.Name], *t.Data)
	}
	return c
}

func widenInto[T Float](dst []T, src []kernels.BF16) {
	for i, b := range src {
		dst[i] = T(b.Float32())
	}
}

// StoreBF16 returns a copy of m with its matrices rounded to bfloat16
// (nearest, ties to even) and its norms and biases copied: for tests and
// benchmarks of the bfloat16 path on models made in float.
func StoreBF16[T Float](m *Model[T]) (*Model[T], error) {
	w := m.Widen()
	c, err := NewZeroModelBF16[T](m.Config)
	if err != nil {
		return nil, err
	}
	byName := map[string][]T{}
	for _, t := range w.tensors() {
		byName[t.Name] = t.Data
	}
	for _, t := range c.tensors() {
		copy(t.Data, byName[t.Name])
	}
	for _, t := range c.TensorsBF16() {
		src := byName[t.Name]
		*t.Data = make([]kernels.BF16, len(src))
		for i, x := range src {
			(*t.Data)[i] = kernels.ToBF16(float32(x))
		}
	}
	return c, nil
}

// Close releases what a bfloat16 model's matrices are views into (a mapped
// checkpoint); the model must not be used afterwards. It is a no-op for
// other models.
func (m *Model[T]) Close() error {
	if m.BF16 == nil || m.BF16.Keep == nil {
		return nil
	}
	err := m.BF16.Keep.Close()
	m.BF16.Keep = nil
	return err
}

// matrixBF16 is block i's matrix of kind k (i < 0: the embedding or the
// unembedding), nil for a model in []T.
func (m *Model[T]) matrixBF16(i int, k kind) []kernels.BF16 {
	s := m.BF16
	if s == nil {
		return nil
	}
	if i < 0 {
		if k == kindUnembed && !m.Config.TiedEmbed {
			return s.Unembed
		}
		return s.Embed
	}
	b := &s.Blocks[i]
	switch k {
	case kindQ:
		return b.Q
	case kindK:
		return b.K
	case kindV:
		return b.V
	case kindO:
		return b.O
	case kindGate:
		return b.Gate
	case kindUp:
		return b.Up
	case kindDown:
		return b.Down
	}
	return nil
}

// embedding is the Vocab×Dim embedding as the kernels read it.
func (m *Model[T]) embedding() frozen[T] {
	c := m.Config
	if w := m.matrixBF16(-1, kindOther); w != nil {
		return bf16Dense[T]{w: w, out: c.Vocab, in: c.Dim}
	}
	return dense[T]{w: m.Embed, out: c.Vocab, in: c.Dim}
}
