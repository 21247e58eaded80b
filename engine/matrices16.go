package engine

import (
	"fmt"
	"io"
	"slices"

	"github.com/tandemrl/tandem/engine/kernels"
)

// Float16 is the element of a frozen base's 16-bit matrices: bfloat16
// ([kernels.BF16]) or IEEE half precision ([kernels.F16]), the two
// precisions real checkpoints are stored in. Either widens to float32
// exactly.
type Float16 interface {
	kernels.BF16 | kernels.F16
	Float32() float32
}

// Matrices16 are a model's weight matrices kept in the 16-bit format W in
// which its checkpoint stores them: the embedding, every projection and
// the unembedding (nil when tied), row-major [out, in] as in [Block]. The
// norms and biases stay in the Model's []T fields. A model holds its
// matrices in at most one such format (Model.BF16 or Model.F16).
//
// Such a model is a frozen base: LoRA trainers train over it and samplers
// sample it, with every product computed from the 16-bit weights directly,
// accumulating in float32. For bfloat16 that is kernels.Par.SgemmBF16: on
// CPUs with AMX-BF16 each activation is split into a bfloat16 high part
// and a bfloat16 remainder, which keep 16 of its significant bits, and the
// tile unit multiplies them; elsewhere it computes exactly what Sgemm
// computes on the weights widened (the sampling step's products reading
// them at 2 bytes each). With RoundActivations the products round each
// activation to one bfloat16 instead (kernels.Par.SgemmBF16RoundA), as
// mixed-precision training does. For IEEE halves it is
// kernels.Par.SgemmF16, which reads the weights at 2 bytes each and
// computes exactly what Sgemm computes on them widened: such a model
// computes what its widened copy does, bit for bit. A full-parameter
// trainer refuses such a model; [Merge], [SaveBase] and [ConvertModel]
// work on its widened copy ([Model.Widen]).
type Matrices16[W Float16] struct {
	Embed   []W // Vocab×Dim
	Unembed []W // Vocab×Dim; nil when Config.TiedEmbed
	Blocks  []Block16[W]
	// Keep is what the slices are views into (a memory-mapped checkpoint),
	// closed by [Model.Close]; nil when they were allocated.
	Keep io.Closer
	// RoundActivations (bfloat16 alone): a float32 model's products with
	// these matrices, forward and backward, round each activation to
	// bfloat16 (a relative error up to 2⁻⁹) and multiply on
	// kernels.Par.SgemmBF16RoundA, with float32 sums; the LoRA factors,
	// norms, attention and softmax stay in float32. Where the CPU has
	// AVX512_BF16 without AMX (AMD's Zen 4 and Zen 5) that is the fastest
	// path, on Zen 5 1.8-2.5 times the exact one on training products; on
	// Intel's cores without AMX it is slower than the exact one, and with
	// AMX, or without AVX512_BF16, the products compute the exact result
	// and round nothing (kernels.BF16RoundsA reports which). Float16
	// matrices and a float64 model ignore it.
	RoundActivations bool
}

// Block16 is one block's matrices in W (shapes as in [Block]).
type Block16[W Float16] struct {
	Q, K, V, O, Gate, Up, Down []W
}

// Tensor16 is one 16-bit matrix of a model under its Hugging Face name:
// Data points at the model's field, for a loader to fill (allocated or a
// view of a mapped file).
type Tensor16[W Float16] struct {
	Name  string
	Shape []int
	Data  *[]W
}

// The two formats' instantiations.
type (
	MatricesBF16 = Matrices16[kernels.BF16]
	BlockBF16    = Block16[kernels.BF16]
	TensorBF16   = Tensor16[kernels.BF16]
	MatricesF16  = Matrices16[kernels.F16]
	BlockF16     = Block16[kernels.F16]
	TensorF16    = Tensor16[kernels.F16]
)

// NewZeroModel16 returns a model of cfg whose matrices are to be kept in
// W: the norms and biases zero []T (filled through [Model.Tensors]), the
// matrices unset (set through [Tensors16]), then checked by [Check16].
func NewZeroModel16[W Float16, T Float](cfg Config) (*Model[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newZeroModel16[W, T](cfg), nil
}

// NewZeroModelBF16 is [NewZeroModel16] for bfloat16 matrices.
func NewZeroModelBF16[T Float](cfg Config) (*Model[T], error) {
	return NewZeroModel16[kernels.BF16, T](cfg)
}

// NewZeroModelF16 is [NewZeroModel16] for IEEE half-precision matrices.
func NewZeroModelF16[T Float](cfg Config) (*Model[T], error) {
	return NewZeroModel16[kernels.F16, T](cfg)
}

func newZeroModel16[W Float16, T Float](cfg Config) *Model[T] {
	m := newZeroModel[T](cfg)
	m.Embed, m.Unembed = nil, nil
	for i := range m.Blocks {
		b := &m.Blocks[i]
		b.Q, b.K, b.V, b.O, b.Gate, b.Up, b.Down = nil, nil, nil, nil, nil, nil, nil
	}
	s := &Matrices16[W]{Blocks: make([]Block16[W], cfg.Layers)}
	switch s := any(s).(type) {
	case *MatricesBF16:
		m.BF16 = s
	case *MatricesF16:
		m.F16 = s
	}
	return m
}

// MatricesOf returns m's matrices in W: m.BF16 or m.F16, nil when m keeps
// its matrices in T or in the other format. They alias m.
func MatricesOf[W Float16, T Float](m *Model[T]) *Matrices16[W] {
	if s, ok := any(m.BF16).(*Matrices16[W]); ok {
		return s
	}
	s, _ := any(m.F16).(*Matrices16[W])
	return s
}

// Tensors16 lists m's matrices in W in the order of [Model.Tensors] (nil
// when m does not keep them in W).
func Tensors16[W Float16, T Float](m *Model[T]) []Tensor16[W] {
	return MatricesOf[W](m).tensors(m.Config)
}

// TensorsBF16 is [Tensors16] for bfloat16 matrices.
func (m *Model[T]) TensorsBF16() []TensorBF16 { return Tensors16[kernels.BF16](m) }

// TensorsF16 is [Tensors16] for IEEE half-precision matrices.
func (m *Model[T]) TensorsF16() []TensorF16 { return Tensors16[kernels.F16](m) }

func (s *Matrices16[W]) tensors(c Config) []Tensor16[W] {
	if s == nil {
		return nil
	}
	d, h, v, q, kv := c.Dim, c.Hidden, c.Vocab, c.QDim(), c.KVDim()
	out := []Tensor16[W]{{"model.embed_tokens.weight", []int{v, d}, &s.Embed}}
	for i := range s.Blocks {
		b := &s.Blocks[i]
		p := fmt.Sprintf("model.layers.%d.", i)
		out = append(out,
			Tensor16[W]{p + "self_attn.q_proj.weight", []int{q, d}, &b.Q},
			Tensor16[W]{p + "self_attn.k_proj.weight", []int{kv, d}, &b.K},
			Tensor16[W]{p + "self_attn.v_proj.weight", []int{kv, d}, &b.V},
			Tensor16[W]{p + "self_attn.o_proj.weight", []int{d, q}, &b.O},
			Tensor16[W]{p + "mlp.gate_proj.weight", []int{h, d}, &b.Gate},
			Tensor16[W]{p + "mlp.up_proj.weight", []int{h, d}, &b.Up},
			Tensor16[W]{p + "mlp.down_proj.weight", []int{d, h}, &b.Down},
		)
	}
	if !c.TiedEmbed {
		out = append(out, Tensor16[W]{"lm_head.weight", []int{v, d}, &s.Unembed})
	}
	return out
}

// Check16 reports a matrix in W that is unset or of the wrong length (nil
// when m does not keep its matrices in W).
func Check16[W Float16, T Float](m *Model[T]) error {
	for _, t := range Tensors16[W](m) {
		want := 1
		for _, d := range t.Shape {
			want *= d
		}
		if len(*t.Data) != want {
			return fmt.Errorf("%w: %s holds %d %s values; shape %v needs %d", ErrShape, t.Name, len(*t.Data), format[W]().name, t.Shape, want)
		}
	}
	return nil
}

// CheckBF16 is [Check16] for bfloat16 matrices.
func (m *Model[T]) CheckBF16() error { return Check16[kernels.BF16](m) }

// CheckF16 is [Check16] for IEEE half-precision matrices.
func (m *Model[T]) CheckF16() error { return Check16[kernels.F16](m) }

// IsBF16 reports whether m keeps its matrices in bfloat16.
func (m *Model[T]) IsBF16() bool { return m.BF16 != nil }

// IsF16 reports whether m keeps its matrices in IEEE half precision.
func (m *Model[T]) IsF16() bool { return m.F16 != nil }

// Is16 reports whether m keeps its matrices in a 16-bit format (bfloat16
// or IEEE half), a frozen base.
func (m *Model[T]) Is16() bool { return m.BF16 != nil || m.F16 != nil }

// Widen returns m with its matrices in T: m itself when they are, else a
// copy with every 16-bit matrix widened (exactly) and the norms and biases
// copied.
func (m *Model[T]) Widen() *Model[T] {
	if !m.Is16() {
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
	widenAll(byName, m.TensorsBF16())
	widenAll(byName, m.TensorsF16())
	return c
}

func widenAll[T Float, W Float16](dst map[string][]T, ts []Tensor16[W]) {
	for _, t := range ts {
		widenInto(dst[t.Name], *t.Data)
	}
}

// StoreBF16 returns a copy of m with its matrices rounded to bfloat16
// (nearest, ties to even) and its norms and biases copied: for tests and
// benchmarks of the bfloat16 path on models made in float.
func StoreBF16[T Float](m *Model[T]) (*Model[T], error) { return store16[kernels.BF16](m) }

// StoreF16 is [StoreBF16] for IEEE half precision: values beyond ±65504
// round to ±Inf, which [Model.CheckF16] does not look for (a loader
// refuses them).
func StoreF16[T Float](m *Model[T]) (*Model[T], error) { return store16[kernels.F16](m) }

func store16[W Float16, T Float](m *Model[T]) (*Model[T], error) {
	w := m.Widen()
	c, err := NewZeroModel16[W, T](m.Config)
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
	round := format[W]().round
	for _, t := range Tensors16[W](c) {
		src := byName[t.Name]
		*t.Data = make([]W, len(src))
		for i, x := range src {
			(*t.Data)[i] = round(float32(x))
		}
	}
	return c, nil
}

// clone16 returns a model of m's config with copies of the matrices s (m's
// own) in memory of their own; the norms and biases are zero.
func clone16[W Float16, T Float](m *Model[T], s *Matrices16[W]) *Model[T] {
	c := newZeroModel16[W, T](m.Config)
	dst := Tensors16[W](c)
	for i, t := range s.tensors(m.Config) {
		*dst[i].Data = slices.Clone(*t.Data)
	}
	MatricesOf[W](c).RoundActivations = s.RoundActivations
	return c
}

// Close releases what a 16-bit model's matrices are views into (a mapped
// checkpoint); the model must not be used afterwards. It is a no-op for
// other models.
func (m *Model[T]) Close() error {
	var keep *io.Closer
	switch {
	case m.BF16 != nil:
		keep = &m.BF16.Keep
	case m.F16 != nil:
		keep = &m.F16.Keep
	}
	if keep == nil || *keep == nil {
		return nil
	}
	err := (*keep).Close()
	*keep = nil
	return err
}

// matrix is block i's matrix of kind k (i < 0: the embedding or the
// unembedding).
func (s *Matrices16[W]) matrix(c Config, i int, k kind) []W {
	if i < 0 {
		if k == kindUnembed && !c.TiedEmbed {
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

// frozen16 is block i's matrix of kind k (i < 0: the embedding or the
// unembedding), out×in, as a view of m's 16-bit matrices; nil when m keeps
// its matrices in T.
func (m *Model[T]) frozen16(i int, k kind, out, in int) frozen[T] {
	switch {
	case m.BF16 != nil:
		d := newDense16[T](m.BF16.matrix(m.Config, i, k), out, in)
		if m.BF16.RoundActivations {
			d.f = formatBF16RoundA
		}
		return d
	case m.F16 != nil:
		return newDense16[T](m.F16.matrix(m.Config, i, k), out, in)
	}
	return nil
}

// embedding is the Vocab×Dim embedding as the kernels read it.
func (m *Model[T]) embedding() frozen[T] {
	c := m.Config
	if w := m.frozen16(-1, kindOther, c.Vocab, c.Dim); w != nil {
		return w
	}
	return dense[T]{w: m.Embed, out: c.Vocab, in: c.Dim}
}
