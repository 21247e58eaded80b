package hf

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"

	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/engine/kernels"
	"github.com/tandemrl/tandem/engine/safetensors"
)

// File names in a Hugging Face model folder.
const (
	ConfigFile           = "config.json"
	GenerationConfigFile = "generation_config.json"
	WeightsFile          = "model.safetensors"
	IndexFile            = "model.safetensors.index.json"
	TokenizerFile        = "tokenizer.json"
	TokenizerConfigFile  = "tokenizer_config.json"
)

// DefaultMaxContext caps the engine context of a loaded model when
// [WithMaxContext] is not given: min(max_position_embeddings, 32768).
// (Llama 3.2 declares 131072 and Qwen3 40960; the engine accepts at most
// 65536, and nothing in tandem trains or samples sequences that long.)
const DefaultMaxContext = 32768

// Options configure [Load]; the zero value means the defaults.
type Options struct {
	// MaxContext caps Config.Context (0 means DefaultMaxContext); the
	// engine context is min(max_position_embeddings, MaxContext).
	MaxContext int
	// UntieDifferentHead: a tied model (tie_word_embeddings true) whose
	// file also holds an lm_head.weight different from embed_tokens is
	// loaded untied, with that lm_head (Config.TiedEmbed false). Without
	// it such a file is an error, since transformers would silently use
	// embed_tokens and drop the stored head.
	UntieDifferentHead bool
	// StoredMatrices: when every matrix (the embedding, the projections
	// and lm_head) is stored in BF16, the model keeps them in bfloat16
	// ([engine.MatricesBF16]); when every one is stored in F16, in IEEE
	// half precision ([engine.MatricesF16]). Either way they are views of
	// the memory-mapped weight files (read into memory where a tensor is
	// not 2-byte aligned), so they take their file's bytes once, shared
	// with every process mapping the same files. The norms and biases are
	// read into T. A checkpoint with its matrices in another dtype, or in
	// more than one, loads in T as without it; Info.MatricesBF16 and
	// Info.MatricesF16 say which happened. Close the model
	// ([engine.Model.Close]) to unmap.
	StoredMatrices bool
	// BF16Matrices is StoredMatrices for BF16 checkpoints alone: an F16
	// one loads in T.
	BF16Matrices bool
}

// Option sets a field of [Options].
type Option func(*Options)

// WithMaxContext caps the engine context at n tokens.
func WithMaxContext(n int) Option { return func(o *Options) { o.MaxContext = n } }

// WithUntieDifferentHead sets [Options.UntieDifferentHead].
func WithUntieDifferentHead() Option { return func(o *Options) { o.UntieDifferentHead = true } }

// WithStoredMatrices sets [Options.StoredMatrices].
func WithStoredMatrices() Option { return func(o *Options) { o.StoredMatrices = true } }

// WithBF16Matrices sets [Options.BF16Matrices].
func WithBF16Matrices() Option { return func(o *Options) { o.BF16Matrices = true } }

// Info describes a loaded checkpoint beyond its engine Config.
type Info struct {
	Dir          string // the folder loaded
	ModelType    string // config.json model_type: llama, mistral, qwen2 or qwen3
	Architecture string // LlamaForCausalLM, …
	// Name is config.json's _name_or_path, else the folder's base name.
	Name string
	// BOS is bos_token_id (generation_config.json's when it sets one,
	// else config.json's); -1 when neither does.
	BOS int
	// EOS is the union, sorted, of eos_token_id in config.json and
	// generation_config.json (each an id or a list): stop on any of them.
	EOS []int
	// MaxPositions is max_position_embeddings; Config.Context may be less
	// (see Options.MaxContext).
	MaxPositions int
	// DType is the torch dtype config.json names ("bfloat16", …; "" when
	// absent); WeightDTypes are the dtypes the weight files store.
	DType        string
	WeightDTypes []safetensors.DType
	// SlidingWindow is the window in effect (0: none); it is never
	// shorter than Config.Context, so it changes nothing.
	SlidingWindow int
	// TokenizerPath is dir/tokenizer.json when the folder has one, else "".
	TokenizerPath string
	// WeightFiles are the safetensors files read, base names.
	WeightFiles []string
	// DroppedLMHead: the model is tied and the file's lm_head.weight, equal
	// to embed_tokens, was not kept (Qwen3-0.6B ships one).
	DroppedLMHead bool
	// Untied: the model was declared tied but its different lm_head.weight
	// was kept (Options.UntieDifferentHead).
	Untied bool
	// MatricesBF16 or MatricesF16: the model keeps its matrices in
	// bfloat16 or in IEEE half precision (Options.StoredMatrices and every
	// matrix stored in BF16, or in F16); MappedBytes of them are views of
	// the mapped weight files.
	MatricesBF16 bool
	MatricesF16  bool
	MappedBytes  int64
}

// Load reads the Hugging Face causal-LM folder dir (config.json, optional
// generation_config.json, model.safetensors or shards with
// model.safetensors.index.json) into a model with elements T.
//
// Weights are read tensor by tensor, straight from the file into the
// model (no copy of a whole file or tensor is held), and converted from
// BF16, F16, F32 or F64 to T; every value must be finite. Each file must
// hold exactly the tensors the config asks for, plus these allowed
// extras: model.layers.N.self_attn.rotary_emb.inv_freq (ignored), and
// lm_head.weight in a tied model when it equals embed_tokens (dropped;
// see Options.UntieDifferentHead). Every problem is a *ConfigError or a
// *WeightError naming the file, field or tensor.
func Load[T engine.Float](dir string, opts ...Option) (*engine.Model[T], *Info, error) {
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	if o.MaxContext == 0 {
		o.MaxContext = DefaultMaxContext
	}
	if o.MaxContext < 1 {
		return nil, nil, fmt.Errorf("%w: MaxContext %d must be ≥ 1 (0 means %d)", ErrConfig, o.MaxContext, DefaultMaxContext)
	}
	cpath := filepath.Join(dir, ConfigFile)
	data, err := os.ReadFile(cpath)
	if err != nil {
		return nil, nil, &ConfigError{File: cpath, Msg: "cannot read the model config: " + err.Error()}
	}
	mc, err := parseConfig(cpath, data, o.MaxContext)
	if err != nil {
		return nil, nil, err
	}
	info := &Info{
		Dir: dir, ModelType: mc.modelType, Architecture: mc.arch, Name: mc.name,
		BOS: mc.bos, EOS: unionIDs(mc.eos), MaxPositions: mc.maxPos, DType: mc.dtype,
		SlidingWindow: mc.slidingWindow,
	}
	if info.Name == "" {
		info.Name = filepath.Base(filepath.Clean(dir))
	}
	if err := checkIDs(cpath, mc.bos, mc.eos, mc.cfg.Vocab); err != nil {
		return nil, nil, err
	}
	gpath := filepath.Join(dir, GenerationConfigFile)
	if gdata, err := os.ReadFile(gpath); err == nil {
		bos, eos, err := parseGeneration(gpath, gdata)
		if err != nil {
			return nil, nil, err
		}
		if err := checkIDs(gpath, bos, eos, mc.cfg.Vocab); err != nil {
			return nil, nil, err
		}
		if bos >= 0 {
			info.BOS = bos
		}
		info.EOS = unionIDs(info.EOS, eos)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, &ConfigError{File: gpath, Msg: err.Error()}
	}
	if _, err := os.Stat(filepath.Join(dir, TokenizerFile)); err == nil {
		info.TokenizerPath = filepath.Join(dir, TokenizerFile)
	}
	if err := mc.cfg.Validate(); err != nil {
		return nil, nil, &ConfigError{File: cpath, Msg: err.Error()}
	}
	m, err := loadWeights[T](dir, mc.cfg, info, o)
	if err != nil {
		return nil, nil, err
	}
	return m, info, nil
}

// checkIDs requires the BOS (-1: none) and EOS ids named in file to be
// in the vocabulary.
func checkIDs(file string, bos int, eos []int, vocab int) error {
	if bos < -1 || bos >= vocab {
		return &ConfigError{File: file, Field: "bos_token_id", Value: fmt.Sprint(bos), Msg: fmt.Sprintf("token id outside the vocabulary [0, %d)", vocab)}
	}
	for _, id := range eos {
		if id < 0 || id >= vocab {
			return &ConfigError{File: file, Field: "eos_token_id", Value: fmt.Sprint(id), Msg: fmt.Sprintf("token id outside the vocabulary [0, %d)", vocab)}
		}
	}
	return nil
}

// weightFiles returns the tensor → file map of dir: model.safetensors
// alone when it exists (as transformers prefers it), else the shard index.
// files lists the files in a fixed order.
func weightFiles(dir string) (where map[string]string, files []string, err error) {
	single := filepath.Join(dir, WeightsFile)
	if _, err := os.Stat(single); err == nil {
		return nil, []string{WeightsFile}, nil
	}
	ipath := filepath.Join(dir, IndexFile)
	data, err := os.ReadFile(ipath)
	if errors.Is(err, fs.ErrNotExist) {
		msg := fmt.Sprintf("no %s and no %s", WeightsFile, IndexFile)
		if bins, _ := filepath.Glob(filepath.Join(dir, "*.bin")); len(bins) > 0 {
			msg += " (PyTorch .bin checkpoints are not supported; convert them to safetensors)"
		}
		return nil, nil, &WeightError{File: dir, Msg: msg}
	}
	if err != nil {
		return nil, nil, &WeightError{File: ipath, Msg: "cannot read the shard index", Err: err}
	}
	where, err = parseIndex(ipath, data)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	for _, f := range where {
		if !seen[f] {
			seen[f] = true
			files = append(files, f)
		}
	}
	sort.Strings(files)
	return where, files, nil
}

var invFreq = regexp.MustCompile(`^model\.layers\.\d+\.self_attn\.rotary_emb\.inv_freq$`)

// shard is one open weight file.
type shard struct {
	name string // base name
	path string
	f    *os.File
	h    *safetensors.Header
}

func openShard(dir, name string) (*shard, error) {
	path := filepath.Join(dir, name)
	f, err := os.Open(path)
	if err != nil {
		return nil, &WeightError{File: path, Msg: "cannot open the weight file", Err: err}
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, &WeightError{File: path, Msg: "cannot stat the weight file", Err: err}
	}
	h, err := safetensors.ReadHeader(f, st.Size())
	if err != nil {
		f.Close()
		return nil, &WeightError{File: path, Msg: "bad safetensors header", Err: err}
	}
	return &shard{name: name, path: path, f: f, h: h}, nil
}

// loadWeights makes the model of cfg and fills it from the weight files of
// dir.
func loadWeights[T engine.Float](dir string, cfg engine.Config, info *Info, o Options) (*engine.Model[T], error) {
	where, files, err := weightFiles(dir)
	if err != nil {
		return nil, err
	}
	shards := map[string]*shard{}
	defer func() {
		for _, s := range shards {
			s.f.Close()
		}
	}()
	owner := map[string]*shard{} // tensor → the shard holding it
	dtypes := map[safetensors.DType]bool{}
	for _, name := range files {
		s, err := openShard(dir, name)
		if err != nil {
			return nil, err
		}
		shards[name] = s
		info.WeightFiles = append(info.WeightFiles, name)
		for _, tn := range s.h.Names() {
			if prev, ok := owner[tn]; ok {
				return nil, &WeightError{File: s.path, Tensor: tn, Msg: "also stored in " + prev.name}
			}
			if where != nil && where[tn] != name {
				if where[tn] == "" {
					return nil, &WeightError{File: s.path, Tensor: tn, Msg: "not listed in " + IndexFile}
				}
				return nil, &WeightError{File: s.path, Tensor: tn, Msg: IndexFile + " places it in " + where[tn]}
			}
			owner[tn] = s
			dtypes[s.h.Tensors[tn].DType] = true
		}
	}
	for tn, fname := range where {
		if owner[tn] == nil {
			return nil, &WeightError{File: filepath.Join(dir, fname), Tensor: tn, Msg: IndexFile + " lists it here but the file does not hold it"}
		}
	}
	for d := range dtypes {
		info.WeightDTypes = append(info.WeightDTypes, d)
	}
	sort.Slice(info.WeightDTypes, func(i, j int) bool { return info.WeightDTypes[i] < info.WeightDTypes[j] })

	m, err := newModelFor[T](cfg, owner, o)
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			m.Close()
		}
	}()
	buf := make([]byte, 1<<20)
	needed := map[string]bool{}
	switch {
	case m.IsBF16():
		err = readMatrices16[kernels.BF16](m, owner, needed, info, buf)
	case m.IsF16():
		err = readMatrices16[kernels.F16](m, owner, needed, info, buf)
	}
	if err != nil {
		return nil, err
	}
	info.MatricesBF16, info.MatricesF16 = m.IsBF16(), m.IsF16()
	for _, t := range m.Tensors() {
		needed[t.Name] = true
		s := owner[t.Name]
		if s == nil {
			file, msg := shards[files[0]].path, "missing"
			if where != nil {
				file, msg = filepath.Join(dir, IndexFile), "missing from the index and from every shard"
			}
			return nil, &WeightError{File: file, Tensor: t.Name, Msg: fmt.Sprintf("%s; the config needs it with shape %v", msg, t.Shape)}
		}
		if err := readTensor(s, t.Name, t.Shape, t.Data, buf); err != nil {
			return nil, err
		}
	}
	var extra []string
	for tn := range owner {
		if !needed[tn] {
			extra = append(extra, tn)
		}
	}
	sort.Strings(extra)
	for _, tn := range extra {
		s := owner[tn]
		switch {
		case invFreq.MatchString(tn):
			if !s.h.Tensors[tn].DType.IsFloat() {
				return nil, &WeightError{File: s.path, Tensor: tn, Msg: fmt.Sprintf("dtype %s; want a floating type", s.h.Tensors[tn].DType)}
			}
		case tn == "lm_head.weight" && m.Config.TiedEmbed && m.IsBF16():
			if err := tiedHead16[kernels.BF16](s, m, info, o); err != nil {
				return nil, err
			}
		case tn == "lm_head.weight" && m.Config.TiedEmbed && m.IsF16():
			if err := tiedHead16[kernels.F16](s, m, info, o); err != nil {
				return nil, err
			}
		case tn == "lm_head.weight" && m.Config.TiedEmbed:
			if err := tiedHead(s, m, info, o, buf); err != nil {
				return nil, err
			}
		default:
			return nil, &WeightError{File: s.path, Tensor: tn, Msg: fmt.Sprintf("unexpected tensor for model_type %q with this config (allowed extras: model.layers.N.self_attn.rotary_emb.inv_freq, and lm_head.weight when tie_word_embeddings is true)", info.ModelType)}
		}
	}
	ok = true
	return m, nil
}

// readTensor checks tensor name's dtype and shape in s and reads it into dst.
func readTensor[T engine.Float](s *shard, name string, shape []int, dst []T, buf []byte) error {
	ti := s.h.Tensors[name]
	if !ti.DType.IsFloat() {
		return &WeightError{File: s.path, Tensor: name, Msg: fmt.Sprintf("dtype %s; want BF16, F16, F32 or F64", ti.DType)}
	}
	if !equalShape(ti.Shape, shape) {
		return &WeightError{File: s.path, Tensor: name, Msg: fmt.Sprintf("shape %v; the config needs %v", ti.Shape, shape)}
	}
	if err := safetensors.ReadFloats(s.f, ti, dst, buf, true); err != nil {
		return &WeightError{File: s.path, Tensor: name, Msg: "cannot read", Err: err}
	}
	return nil
}

// tiedHead handles lm_head.weight in a tied model: equal to embed_tokens,
// it is dropped; different, it is an error unless o.UntieDifferentHead,
// when m is untied and keeps it.
func tiedHead[T engine.Float](s *shard, m *engine.Model[T], info *Info, o Options, buf []byte) error {
	const name = "lm_head.weight"
	v, d := m.Config.Vocab, m.Config.Dim
	ti := s.h.Tensors[name]
	if !ti.DType.IsFloat() || !equalShape(ti.Shape, []int{v, d}) {
		return readTensor(s, name, []int{v, d}, []T(nil), buf) // reports the dtype or shape
	}
	// Compare a block of rows at a time, so no second V×D copy is made.
	size := int64(ti.DType.Size())
	rows := max(1, len(buf)/(d*int(size)))
	part := make([]T, min(rows, v)*d)
	for r := 0; r < v; r += rows {
		n := min(rows, v-r)
		sub := safetensors.TensorInfo{DType: ti.DType, Shape: []int{n, d}, Begin: ti.Begin + int64(r*d)*size}
		sub.End = sub.Begin + int64(n*d)*size
		if err := safetensors.ReadFloats(s.f, sub, part[:n*d], buf, true); err != nil {
			return &WeightError{File: s.path, Tensor: name, Msg: "cannot read", Err: err}
		}
		for i, x := range part[:n*d] {
			if e := m.Embed[r*d+i]; x != e {
				if !o.UntieDifferentHead {
					return &WeightError{File: s.path, Tensor: name, Msg: fmt.Sprintf(
						"tie_word_embeddings is true but lm_head.weight differs from model.embed_tokens.weight (element %d: %v vs %v); transformers would ignore it, load with hf.WithUntieDifferentHead() to keep it", r*d+i, x, e)}
				}
				head := make([]T, v*d)
				if err := readTensor(s, name, []int{v, d}, head, buf); err != nil {
					return err
				}
				m.Config.TiedEmbed = false
				m.Unembed = head
				info.Untied = true
				return nil
			}
		}
	}
	info.DroppedLMHead = true
	return nil
}

func equalShape(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
