package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
)

// Model holds the base weights of a transformer. Matrices are row-major
// [out, in]. A Model is plain data: reading it from many goroutines is safe,
// writing it while another goroutine reads is not. The trainer and the
// sampler each keep their own copy ([Model.Clone]).
type Model[T Float] struct {
	Config    Config
	Embed     []T // Vocab×Dim
	Blocks    []Block[T]
	FinalNorm []T // Dim
	Unembed   []T // Vocab×Dim; nil when Config.TiedEmbed (Embed is used)
	// BF16 or F16, when set, holds the matrices in bfloat16 or in IEEE
	// half precision, and the []T matrix fields (Embed, Unembed, each
	// Block's projections) are nil; see [Matrices16] and [NewZeroModel16].
	// At most one of the two is set.
	BF16 *MatricesBF16
	F16  *MatricesF16
}

// Block is one transformer block's weights. With QDim = Heads·HeadDim and
// KVDim = KVHeads·HeadDim (both Dim for tandem's own model), the optional
// tensors are nil unless the Config asks for them.
type Block[T Float] struct {
	AttnNorm            []T // Dim
	Q                   []T // QDim×Dim
	K, V                []T // KVDim×Dim each
	O                   []T // Dim×QDim
	QBias, KBias, VBias []T // QDim, KVDim, KVDim (Config.QKVBias)
	OBias               []T // Dim (Config.OBias)
	QNorm, KNorm        []T // HeadDim each (Config.QKNorm)
	MLPNorm             []T // Dim
	Gate, Up            []T // Hidden×Dim each
	Down                []T // Dim×Hidden
}

// NewModel returns a model with random weights drawn from seed: matrices
// normal with standard deviation 0.02 (the residual output projections O and
// Down scaled by 1/√(2·Layers)), norms 1. The same config and seed give the
// same weights, bit for bit.
func NewModel[T Float](cfg Config, seed uint64) (*Model[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := newZeroModel[T](cfg)
	rng := rand.New(rand.NewPCG(seed, 0x7a6e646d)) // "tandem"-ish stream id
	resid := 0.02 / math.Sqrt(2*float64(cfg.Layers))
	for _, t := range m.tensors() {
		std := 0.02
		switch {
		case len(t.Shape) == 1 && strings.HasSuffix(t.Name, ".bias"):
			// biases: normal like the matrices (zero would hide them from tests)
		case len(t.Shape) == 1:
			for i := range t.Data {
				t.Data[i] = 1
			}
			continue
		case t.kind == kindO || t.kind == kindDown:
			std = resid
		}
		for i := range t.Data {
			t.Data[i] = T(rng.NormFloat64() * std)
		}
	}
	return m, nil
}

func newZeroModel[T Float](cfg Config) *Model[T] {
	d, h, v := cfg.Dim, cfg.Hidden, cfg.Vocab
	q, kv, hd := cfg.QDim(), cfg.KVDim(), cfg.headDim()
	m := &Model[T]{
		Config:    cfg,
		Embed:     zeros[T](v * d),
		Blocks:    make([]Block[T], cfg.Layers),
		FinalNorm: zeros[T](d),
	}
	if !cfg.TiedEmbed {
		m.Unembed = zeros[T](v * d)
	}
	for i := range m.Blocks {
		b := Block[T]{
			AttnNorm: zeros[T](d),
			Q:        zeros[T](q * d), K: zeros[T](kv * d), V: zeros[T](kv * d), O: zeros[T](d * q),
			MLPNorm: zeros[T](d),
			Gate:    zeros[T](h * d), Up: zeros[T](h * d), Down: zeros[T](d * h),
		}
		if cfg.QKVBias {
			b.QBias, b.KBias, b.VBias = zeros[T](q), zeros[T](kv), zeros[T](kv)
		}
		if cfg.OBias {
			b.OBias = zeros[T](d)
		}
		if cfg.QKNorm {
			b.QNorm, b.KNorm = zeros[T](hd), zeros[T](hd)
		}
		m.Blocks[i] = b
	}
	return m
}

// Clone returns a deep copy of m (a 16-bit model's matrices copied into
// memory of their own, even when they were views of a mapped file).
func (m *Model[T]) Clone() *Model[T] {
	var c *Model[T]
	switch {
	case m.BF16 != nil:
		c = clone16(m, m.BF16)
	case m.F16 != nil:
		c = clone16(m, m.F16)
	default:
		c = newZeroModel[T](m.Config)
	}
	src, dst := m.tensors(), c.tensors()
	for i := range src {
		copy(dst[i].Data, src[i].Data)
	}
	return c
}

// NumParams returns the number of weights.
func (m *Model[T]) NumParams() int {
	n := 0
	for _, t := range m.tensors() {
		n += len(t.Data)
	}
	return n + elems16(m.TensorsBF16()) + elems16(m.TensorsF16())
}

func elems16[W Float16](ts []Tensor16[W]) int {
	n := 0
	for _, t := range ts {
		n += len(*t.Data)
	}
	return n
}

// ConvertModel returns a copy of m with elements of type U.
func ConvertModel[U, T Float](m *Model[T]) *Model[U] {
	m = m.Widen()
	c := newZeroModel[U](m.Config)
	src, dst := m.tensors(), c.tensors()
	for i := range src {
		for j, x := range src[i].Data {
			dst[i].Data[j] = U(x)
		}
	}
	return c
}

// kind names what a weight matrix is, for LoRA targeting and initialization.
type kind int

const (
	kindOther kind = iota
	kindQ
	kindK
	kindV
	kindO
	kindGate
	kindUp
	kindDown
	kindUnembed
)

// peftModule is the Hugging Face module name of each adaptable kind.
var peftModule = map[kind]string{
	kindQ: "q_proj", kindK: "k_proj", kindV: "v_proj", kindO: "o_proj",
	kindGate: "gate_proj", kindUp: "up_proj", kindDown: "down_proj", kindUnembed: "lm_head",
}

// namedTensor is a view of one weight: its Hugging Face name, shape and data.
type namedTensor[T Float] struct {
	Name  string
	Shape []int
	Data  []T
	kind  kind
	layer int // -1 outside blocks
}

// tensors lists m's weights in a fixed order under their Hugging Face
// (Llama) names; optional tensors the Config does not ask for are left
// out, and so are a 16-bit model's matrices ([Tensors16] lists them). The
// Data slices alias m.
func (m *Model[T]) tensors() []namedTensor[T] {
	all := m.allTensors()
	if !m.Is16() {
		return all
	}
	out := all[:0]
	for _, t := range all {
		if t.Data != nil {
			out = append(out, t)
		}
	}
	return out
}

func (m *Model[T]) allTensors() []namedTensor[T] {
	c := m.Config
	d, h, v := c.Dim, c.Hidden, c.Vocab
	q, kv, hd := c.QDim(), c.KVDim(), c.headDim()
	out := []namedTensor[T]{{Name: "model.embed_tokens.weight", Shape: []int{v, d}, Data: m.Embed, layer: -1}}
	for i := range m.Blocks {
		b := &m.Blocks[i]
		p := fmt.Sprintf("model.layers.%d.", i)
		out = append(out,
			namedTensor[T]{Name: p + "input_layernorm.weight", Shape: []int{d}, Data: b.AttnNorm, layer: i},
			namedTensor[T]{Name: p + "self_attn.q_proj.weight", Shape: []int{q, d}, Data: b.Q, kind: kindQ, layer: i},
			namedTensor[T]{Name: p + "self_attn.k_proj.weight", Shape: []int{kv, d}, Data: b.K, kind: kindK, layer: i},
			namedTensor[T]{Name: p + "self_attn.v_proj.weight", Shape: []int{kv, d}, Data: b.V, kind: kindV, layer: i},
			namedTensor[T]{Name: p + "self_attn.o_proj.weight", Shape: []int{d, q}, Data: b.O, kind: kindO, layer: i},
		)
		if c.QKVBias {
			out = append(out,
				namedTensor[T]{Name: p + "self_attn.q_proj.bias", Shape: []int{q}, Data: b.QBias, layer: i},
				namedTensor[T]{Name: p + "self_attn.k_proj.bias", Shape: []int{kv}, Data: b.KBias, layer: i},
				namedTensor[T]{Name: p + "self_attn.v_proj.bias", Shape: []int{kv}, Data: b.VBias, layer: i},
			)
		}
		if c.OBias {
			out = append(out, namedTensor[T]{Name: p + "self_attn.o_proj.bias", Shape: []int{d}, Data: b.OBias, layer: i})
		}
		if c.QKNorm {
			out = append(out,
				namedTensor[T]{Name: p + "self_attn.q_norm.weight", Shape: []int{hd}, Data: b.QNorm, layer: i},
				namedTensor[T]{Name: p + "self_attn.k_norm.weight", Shape: []int{hd}, Data: b.KNorm, layer: i},
			)
		}
		out = append(out,
			namedTensor[T]{Name: p + "post_attention_layernorm.weight", Shape: []int{d}, Data: b.MLPNorm, layer: i},
			namedTensor[T]{Name: p + "mlp.gate_proj.weight", Shape: []int{h, d}, Data: b.Gate, kind: kindGate, layer: i},
			namedTensor[T]{Name: p + "mlp.up_proj.weight", Shape: []int{h, d}, Data: b.Up, kind: kindUp, layer: i},
			namedTensor[T]{Name: p + "mlp.down_proj.weight", Shape: []int{d, h}, Data: b.Down, kind: kindDown, layer: i},
		)
	}
	out = append(out, namedTensor[T]{Name: "model.norm.weight", Shape: []int{d}, Data: m.FinalNorm, layer: -1})
	if !c.TiedEmbed {
		out = append(out, namedTensor[T]{Name: "lm_head.weight", Shape: []int{v, d}, Data: m.Unembed, kind: kindUnembed, layer: -1})
	}
	return out
}

// Tensor is one weight of a Model under its Hugging Face name, with its
// shape; Data aliases the model's slice.
type Tensor[T Float] struct {
	Name  string
	Shape []int
	Data  []T
}

// Tensors lists m's weights under their Hugging Face (Llama/Qwen) names,
// in a fixed order; the tensors cfg does not ask for (biases, q/k norms,
// lm_head when tied) are left out. Writing through Data changes m.
func (m *Model[T]) Tensors() []Tensor[T] {
	ts := m.tensors()
	out := make([]Tensor[T], len(ts))
	for i, t := range ts {
		out[i] = Tensor[T]{Name: t.Name, Shape: t.Shape, Data: t.Data}
	}
	return out
}

// NewZeroModel returns a model of cfg with every weight zero, to be filled
// through [Model.Tensors] (a checkpoint loader does).
func NewZeroModel[T Float](cfg Config) (*Model[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newZeroModel[T](cfg), nil
}

// unembed returns the Vocab×Dim unembedding: Unembed, or Embed when the
// config ties them.
func (m *Model[T]) unembed() []T {
	if m.Config.TiedEmbed {
		return m.Embed
	}
	return m.Unembed
}
