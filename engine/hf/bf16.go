package hf

import (
	"errors"
	"fmt"
	"io"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/kernels"
	"github.com/tandemrl/tandem/engine/safetensors"
)

// newModelFor returns the zero model a checkpoint loads into: with its
// matrices in bfloat16 when o.BF16Matrices and every matrix cfg needs is
// stored in BF16, else in T (a missing matrix is reported by the reads).
func newModelFor[T engine.Float](cfg engine.Config, owner map[string]*shard, o Options) (*engine.Model[T], error) {
	if o.BF16Matrices {
		m, err := engine.NewZeroModelBF16[T](cfg)
		if err != nil {
			return nil, err
		}
		all := true
		for _, t := range m.TensorsBF16() {
			if s := owner[t.Name]; s == nil || s.h.Tensors[t.Name].DType != safetensors.BF16 {
				all = false
				break
			}
		}
		if all {
			return m, nil
		}
	}
	return engine.NewZeroModel[T](cfg)
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

// readBF16Matrices sets every matrix of the bfloat16 model m: a view of
// its shard's mapping when aligned, else read into memory; every value
// must be finite. The mappings are m's to close.
func readBF16Matrices[T engine.Float](m *engine.Model[T], owner map[string]*shard, needed map[string]bool, info *Info, buf []byte) error {
	maps := map[*shard]*safetensors.Mapping{}
	closers := &multiCloser{}
	m.BF16.Keep = closers
	for _, t := range m.TensorsBF16() {
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
		v, mapped, err := bf16Tensor(s, mp, t.Name, buf)
		if err != nil {
			return err
		}
		*t.Data = v
		if mapped {
			info.MappedBytes += int64(2 * len(v))
		}
	}
	info.MatricesBF16 = true
	return m.CheckBF16()
}

// bf16Tensor returns the BF16 tensor name of shard s, every value finite:
// a view of s's mapping mp when aligned (mapped), else read into memory.
func bf16Tensor(s *shard, mp *safetensors.Mapping, name string, buf []byte) (v []kernels.BF16, mapped bool, err error) {
	ti := s.h.Tensors[name]
	v, mapped = safetensors.BF16View[kernels.BF16](mp, mp.Header.Tensors[name])
	if mapped {
		err = safetensors.CheckFiniteBF16(v)
	} else {
		v = make([]kernels.BF16, ti.Elems())
		err = safetensors.ReadBF16(s.f, ti, v, buf, true)
	}
	if err != nil {
		return nil, false, &WeightError{File: s.path, Tensor: name, Msg: "cannot read", Err: err}
	}
	return v, mapped, nil
}

// tiedHeadBF16 is tiedHead for a bfloat16 model: an lm_head.weight equal
// to embed_tokens bit for bit is dropped; a different one is an error
// unless o.UntieDifferentHead, when m is untied and keeps it (it must be
// BF16 too). The head is compared (and kept) as a view of its mapped
// shard where aligned, so no second vocab×dim copy is made.
func tiedHeadBF16[T engine.Float](s *shard, m *engine.Model[T], info *Info, o Options) error {
	const name = "lm_head.weight"
	v, d := m.Config.Vocab, m.Config.Dim
	ti := s.h.Tensors[name]
	if ti.DType != safetensors.BF16 || !equalShape(ti.Shape, []int{v, d}) {
		return &WeightError{File: s.path, Tensor: name, Msg: fmt.Sprintf(
			"dtype %s, shape %v; with the matrices kept in bfloat16 a tied lm_head must be BF16 of shape %v (load without hf.WithBF16Matrices())", ti.DType, ti.Shape, []int{v, d})}
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
	head, mapped, err := bf16Tensor(s, mp, name, nil)
	if err != nil {
		return err
	}
	for i, x := range head {
		if e := m.BF16.Embed[i]; x != e {
			if !o.UntieDifferentHead {
				return &WeightError{File: s.path, Tensor: name, Msg: fmt.Sprintf(
					"tie_word_embeddings is true but lm_head.weight differs from model.embed_tokens.weight (element %d: %v vs %v); transformers would ignore it, load with hf.WithUntieDifferentHead() to keep it", i, x.Float32(), e.Float32())}
			}
			m.Config.TiedEmbed = false
			m.BF16.Unembed = head
			info.Untied = true
			if mapped {
				info.MappedBytes += int64(2 * len(head))
				closers := m.BF16.Keep.(*multiCloser)
				*closers = append(*closers, mp)
				keep = true
			}
			return nil
		}
	}
	info.DroppedLMHead = true
	return nil
}
