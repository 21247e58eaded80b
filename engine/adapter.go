package engine

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// LoraPair is one adapted linear layer: A is Rank×In, B is Out×Rank, and the
// layer computes y = x·Wᵀ + Scale·(x·Aᵀ)·Bᵀ.
type LoraPair[T Float] struct {
	A, B          []T
	In, Out, Rank int
}

// BlockAdapter holds one block's adapters; a nil pair is not adapted.
type BlockAdapter[T Float] struct {
	Q, K, V, O     *LoraPair[T]
	Gate, Up, Down *LoraPair[T]
}

// Adapter is a LoRA adapter for a model of shape Model. Like [Model] it is
// plain data, safe to read concurrently.
type Adapter[T Float] struct {
	Lora    LoraConfig
	Model   Config
	Blocks  []BlockAdapter[T]
	Unembed *LoraPair[T] // nil unless Lora.TrainUnembed
}

// NewAdapter returns a fresh adapter: A uniform in ±1/√In drawn from
// lora.Seed, B zero (so the adapted model equals the base).
func NewAdapter[T Float](cfg Config, lora LoraConfig) (*Adapter[T], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := lora.Validate(); err != nil {
		return nil, err
	}
	a := newZeroAdapter[T](cfg, lora)
	for i, t := range a.tensors() {
		if !t.isA {
			continue
		}
		rng := rand.New(rand.NewPCG(uint64(lora.Seed), uint64(i)))
		bound := 1 / math.Sqrt(float64(t.Shape[1]))
		for j := range t.Data {
			t.Data[j] = T((2*rng.Float64() - 1) * bound)
		}
	}
	return a, nil
}

func newPair[T Float](in, out, rank int) *LoraPair[T] {
	return &LoraPair[T]{A: zeros[T](rank * in), B: zeros[T](out * rank), In: in, Out: out, Rank: rank}
}

func newZeroAdapter[T Float](cfg Config, lora LoraConfig) *Adapter[T] {
	d, h, r := cfg.Dim, cfg.Hidden, lora.Rank
	q, kv := cfg.QDim(), cfg.KVDim()
	lora.Alpha = lora.alpha() // store the resolved default
	a := &Adapter[T]{Lora: lora, Model: cfg, Blocks: make([]BlockAdapter[T], cfg.Layers)}
	for i := range a.Blocks {
		b := &a.Blocks[i]
		if lora.TrainAttn {
			b.Q, b.K, b.V, b.O = newPair[T](d, q, r), newPair[T](d, kv, r), newPair[T](d, kv, r), newPair[T](q, d, r)
		}
		if lora.TrainMLP {
			b.Gate, b.Up, b.Down = newPair[T](d, h, r), newPair[T](d, h, r), newPair[T](h, d, r)
		}
	}
	if lora.TrainUnembed {
		a.Unembed = newPair[T](d, cfg.Vocab, r)
	}
	return a
}

// Clone returns a deep copy of a.
func (a *Adapter[T]) Clone() *Adapter[T] {
	c := newZeroAdapter[T](a.Model, a.Lora)
	src, dst := a.tensors(), c.tensors()
	for i := range src {
		copy(dst[i].Data, src[i].Data)
	}
	return c
}

// NumParams returns the number of adapter weights.
func (a *Adapter[T]) NumParams() int {
	n := 0
	for _, t := range a.tensors() {
		n += len(t.Data)
	}
	return n
}

// adapterTensor is a view of one adapter matrix under its PEFT name.
type adapterTensor[T Float] struct {
	Name  string
	Shape []int
	Data  []T
	isA   bool
	kind  kind
}

// tensors lists the adapter's matrices in a fixed order under PEFT names
// (base_model.model.<module>.lora_A.weight, shape [r, in]; lora_B, [out, r]).
func (a *Adapter[T]) tensors() []adapterTensor[T] {
	var out []adapterTensor[T]
	add := func(prefix string, k kind, p *LoraPair[T]) {
		if p == nil {
			return
		}
		out = append(out,
			adapterTensor[T]{Name: prefix + ".lora_A.weight", Shape: []int{p.Rank, p.In}, Data: p.A, isA: true, kind: k},
			adapterTensor[T]{Name: prefix + ".lora_B.weight", Shape: []int{p.Out, p.Rank}, Data: p.B, kind: k},
		)
	}
	for i := range a.Blocks {
		b := &a.Blocks[i]
		p := fmt.Sprintf("base_model.model.model.layers.%d.", i)
		add(p+"self_attn.q_proj", kindQ, b.Q)
		add(p+"self_attn.k_proj", kindK, b.K)
		add(p+"self_attn.v_proj", kindV, b.V)
		add(p+"self_attn.o_proj", kindO, b.O)
		add(p+"mlp.gate_proj", kindGate, b.Gate)
		add(p+"mlp.up_proj", kindUp, b.Up)
		add(p+"mlp.down_proj", kindDown, b.Down)
	}
	add("base_model.model.lm_head", kindUnembed, a.Unembed)
	return out
}

// targetModules returns the PEFT target_modules of a's configuration.
func (l LoraConfig) targetModules() []string {
	var out []string
	if l.TrainAttn {
		out = append(out, "q_proj", "k_proj", "v_proj", "o_proj")
	}
	if l.TrainMLP {
		out = append(out, "gate_proj", "up_proj", "down_proj")
	}
	if l.TrainUnembed {
		out = append(out, "lm_head")
	}
	return out
}

// checkFor reports whether a is an adapter for a model of shape cfg, with
// every pair of the shape cfg and a.Lora ask for.
func (a *Adapter[T]) checkFor(cfg Config) error {
	if !a.Model.equal(cfg) {
		return fmt.Errorf("%w: adapter is for model %+v, base is %+v", ErrShape, a.Model, cfg)
	}
	want := newZeroAdapter[T](cfg, a.Lora).tensors()
	got := a.tensors()
	if len(got) != len(want) {
		return fmt.Errorf("%w: adapter has %d tensors; its lora config %+v needs %d", ErrShape, len(got), a.Lora, len(want))
	}
	for i := range got {
		if got[i].Name != want[i].Name || !slices.Equal(got[i].Shape, want[i].Shape) || len(got[i].Data) != len(want[i].Data) {
			return fmt.Errorf("%w: adapter tensor %s has shape %v (%d values); the model needs %s %v", ErrShape,
				got[i].Name, got[i].Shape, len(got[i].Data), want[i].Name, want[i].Shape)
		}
	}
	return nil
}

// Merge returns a copy of base with a folded in: W' = W + Scale·B·A for every
// adapted layer. A nil adapter returns a plain copy. The shapes must agree.
// With an adapter, a 16-bit base is widened first: the result is in T.
// An lm_head adapter cannot be merged into a tied embedding (it would change
// the input embedding too); the sampler applies adapters unmerged instead.
func Merge[T Float](base *Model[T], a *Adapter[T]) (*Model[T], error) {
	if a == nil {
		return base.Clone(), nil
	}
	if err := a.checkFor(base.Config); err != nil {
		return nil, err
	}
	if a.Unembed != nil && base.Config.TiedEmbed {
		return nil, fmt.Errorf("%w: cannot merge an lm_head adapter into a tied embedding", ErrShape)
	}
	m := base.Widen() // a copy when base keeps 16-bit matrices
	if m == base {
		m = base.Clone()
	}
	s := T(a.Lora.Scale())
	fold := func(w []T, p *LoraPair[T]) {
		if p != nil {
			gemm(par{}, false, false, p.Out, p.In, p.Rank, s, p.B, p.Rank, p.A, p.In, 1, w, p.In)
		}
	}
	for i := range m.Blocks {
		b, ab := &m.Blocks[i], &a.Blocks[i]
		fold(b.Q, ab.Q)
		fold(b.K, ab.K)
		fold(b.V, ab.V)
		fold(b.O, ab.O)
		fold(b.Gate, ab.Gate)
		fold(b.Up, ab.Up)
		fold(b.Down, ab.Down)
	}
	fold(m.Unembed, a.Unembed)
	return m, nil
}
