package hf

import (
	"errors"
	"fmt"
	"io"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/kernels"
	"github.com/tandemrl/tandem/engine/safetensors"
)

// stored16 is how a checkpoint's 16-bit dtype is read into the engine's W.
type stored16[W engine.Float16] struct {
	dtype safetensors.DType
	name  string // in messages
	view  func(*safetensors.Mapping, safetensors.TensorInfo) ([]W, bool)
	read  func(io.ReaderAt, safetensors.TensorInfo, []W, []byte, bool) error
	check func([]W) error
}

var (
	storedBF16 = &stored16[kernels.BF16]{safetensors.BF16, "bfloat16",
		safetensors.BF16View[kernels.BF16], safetensors.ReadBF16[kernels.BF16], safetensors.CheckFiniteBF16[kernels.BF16]}
	storedF16 = &stored16[kernels.F16]{safetensors.F16, "float16",
		safetensors.F16View[kernels.F16], safetensors.ReadF16[kernels.F16], safetensors.CheckFiniteF16[kernels.F16]}
)

// storedAs returns W's stored16.
func storedAs[W engine.Float16]() *stored16[W] {
	if f, ok := any(storedBF16).(*stored16[W]); ok {
		return f
	}
	return any(storedF16).(*stored16[W])
}

// newModelFor returns the zero model a checkpoint loads into: with its
// matrices in bfloat16 when o.BF16Matrices or o.StoredMatrices and every
// matrix cfg needs is stored in BF16, in IEEE half precision when
// o.StoredMatrices and every one is stored in F16, else in T (a missing
// matrix is reported by the reads).
func newModelFor[T engine.Float](cfg engine.Config, owner map[string]*shard, o Options) (*engine.Model[T], error) {
	if o.BF16Matrices || o.StoredMatrices {
		if m, err := newModelIfStored[kernels.BF16, T](cfg, owner); m != nil || err != nil {
			return m, err
		}
	}
	if o.StoredMatrices {
		if m, err := newModelIfStored[kernels.F16, T](cfg, owner); m != nil || err != nil {
			return m, err
		}
	}
	return engine.NewZeroModel[T](cfg)
}

// newModelIfStored returns the zero model of cfg with its matrices in W
// when every matrix it needs is stored in W's dtype, else nil.
func newModelIfStored[W engine.Float16, T engine.Float](cfg engine.Config, owner map[string]*shard) (*engine.Model[T], error) {
	m, err := engine.NewZeroModel16[W, T](cfg)
	if err != nil {
		return nil, err
	}
	dtype := storedAs[W]().dtype
	for _, t := range engine.Tensors16[W](m) {
		if s := owner[t.Name]; s == nil || s.h.Tensors[t.Name].DType != dtype {
			return nil, nil
		}
	}
	return m, nil
}

// multiCloser closes every mapping of a model's weight files.
type multiCloser []io.Closer

func (c *multiCloser) Close() error {
	var errs []error
	for _, x := range *c {
		errs = append(errs, x.Close())
	}
	*c = nil
	return errors.Join(errs...)
}

// readMatrices16 sets every matrix of m, whose matrices are kept in W: a
// view of its shard's mapping when aligned, else read into memory; every
// value must be finite. The mappings are m's to close.
func readMatrices16[W engine.Float16, T engine.Float](m *engine.Model[T], owner map[string]*shard, needed map[string]bool, info *Info, buf []byte) error {
	maps := map[*shard]*safetensors.Mapping{}
	closers := &multiCloser{}
	engine.MatricesOf[W](m).Keep = closers
	for _, t := range engine.Tensors16[W](m) {
		needed[t.Name] = true
		s := owner[t.Name]
		ti := s.h.Tensors[t.Name]
		if !equalShape(ti.Shape, t.Shape) {
			return &WeightError{File: s.path, Tensor: t.Name, Msg: fmt.Sprintf("shape %v; the config needs %v", ti.Shape, t.Shape)}
		}
		mp := maps[s]
		if mp == nil {
			var err error
			if mp, err = safetensors.Map(s.path); err != nil {
				return &WeightError{File: s.path, Msg: "cannot map the weight file", Err: err}
			}
			maps[s] = mp
			*closers = append(*closers, mp)
		}
		v, mapped, err := tensor16[W](s, mp, t.Name, buf)
		if err != nil {
			return err
		}
		*t.Data = v
		if mapped {
			info.MappedBytes += int64(2 * len(v))
		}
	}
	return engine.Check16[W](m)
}

// tensor16 returns the tensor name of shard s, stored in W's dtype, every
// value finite: a view of s's mapping mp when aligned (mapped), else read
// into memory.
func tensor16[W engine.Float16](s *shard, mp *safetensors.Mapping, name string, buf []byte) (v []W, mapped bool, err error) {
	f := storedAs[W]()
	ti := s.h.Tensors[name]
	v, mapped = f.view(mp, mp.Header.Tensors[name])
	if mapped {
		err = f.check(v)
	} else {
		v = make([]W, ti.Elems())
		err = f.read(s.f, ti, v, buf, true)
	}
	if err != nil {
		return nil, false, &WeightError{File: s.path, Tensor: name, Msg: "cannot read", Err: err}
	}
	return v, mapped, nil
}

// tiedHead16 is tiedHead for a model whose matrices are kept in W: an
// lm_head.weight equal to embed_tokens bit for bit is dropped; a different
// one is an error unless o.UntieDifferentHead, when m is untied and keeps
// it (it must be stored in W's dtype too). The head is compared (and kept)
// as a view of its mapped shard where aligned, so no second vocab×dim copy
// is made.
func tiedHead16[W engine.Float16, T engine.Float](s *shard, m *engine.Model[T], info *Info, o Options) error {
	const name = "lm_head.weight"
	f := storedAs[W]()
	v, d := m.Config.Vocab, m.Config.Dim
	ti := s.h.Tensors[name]
	if ti.DType != f.dtype || !equalShape(ti.Shape, []int{v, d}) {
		opt := "hf.WithBF16Matrices()"
		if o.StoredMatrices {
			opt = "hf.WithStoredMatrices()"
		}
		return &WeightError{File: s.path, Tensor: name, Msg: fmt.Sprintf(
			"dtype %s, shape %v; with the matrices kept in %s a tied lm_head must be %s of shape %v (load without %s)", ti.DType, ti.Shape, f.name, f.dtype, []int{v, d}, opt)}
	}
	mp, err := safetensors.Map(s.path)
	if err != nil {
		return &WeightError{File: s.path, Msg: "cannot map the weight file", Err: err}
	}
	keep := false // the untied head is a view of mp: m closes it
	defer func() {
		if !keep {
			mp.Close()
		}
	}()
	head, mapped, err := tensor16[W](s, mp, name, nil)
	if err != nil {
		return err
	}
	mats := engine.MatricesOf[W](m)
	for i, x := range head {
		if e := mats.Embed[i]; x != e {
			if !o.UntieDifferentHead {
				return &WeightError{File: s.path, Tensor: name, Msg: fmt.Sprintf(
					"tie_word_embeddings is true but lm_head.weight differs from model.embed_tokens.weight (element %d: %v vs %v); transformers would ignore it, load with hf.WithUntieDifferentHead() to keep it", i, x.Float32(), e.Float32())}
			}
			m.Config.TiedEmbed = false
			mats.Unembed = head
			info.Untied = true
			if mapped {
				info.MappedBytes += int64(2 * len(head))
				closers := mats.Keep.(*multiCloser)
				*closers = append(*closers, mp)
				keep = true
			}
			return nil
		}
	}
	info.DroppedLMHead = true
	return nil
}
