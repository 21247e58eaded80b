package tokenizer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Tokenizer encodes text to token ids and decodes ids to text exactly as
// Hugging Face's tokenizers crate does with the same tokenizer.json. It is
// read-only once built and safe for concurrent use.
type Tokenizer struct {
	model      model
	normalizer normalizer   // nil: none
	pre        preTokenizer // nil: none
	added      *addedVocab

	decoders  []decoder
	noDecoder bool // no decoder: tokens are joined with spaces

	// post is the post-processor's template for one sequence with special
	// tokens (nil when it adds nothing); prefix and suffix are its ids
	// when it only wraps the sequence (wraps). postPlain is the template
	// without special tokens: nil but for odd templates that repeat the
	// sequence.
	post           template
	postPlain      template
	prefix, suffix []int
	wraps          bool

	vocabSize int
	cfg       Config
	pool      sync.Pool // *scratch
}

// Load reads dir/tokenizer.json and, when present,
// dir/tokenizer_config.json, as in a Hugging Face model folder.
func Load(dir string) (*Tokenizer, error) {
	tj, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	cj, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := Parse(tj, cj)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", dir, err)
	}
	return t, nil
}

// Parse builds a Tokenizer from the contents of tokenizer.json and of
// tokenizer_config.json (configJSON may be nil). A malformed file, an
// unknown component type or an unsupported flag is a *LoadError naming
// the file, the JSON path and what was wrong.
func Parse(tokenizerJSON, configJSON []byte) (*Tokenizer, error) {
	t, err := parseTokenizer(tokenizerJSON, false)
	if err != nil {
		return nil, err
	}
	if configJSON != nil {
		if t.cfg, err = parseConfig(configJSON); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// Encode returns the ids of text, as Hugging Face's
// tokenizer.encode(text, add_special_tokens=opt.AddSpecialTokens) does with
// the tokenizer.json as written: the post-processor of the file is applied
// as is (transformers may rewrite it from tokenizer_config.json, e.g.
// LlamaTokenizerFast from add_bos_token; this package does not).
//
// Text that is not valid UTF-8 is read as Rust's String::from_utf8_lossy
// reads it: each maximal invalid byte sequence becomes one U+FFFD, which
// is then encoded like any other character.
func (t *Tokenizer) Encode(text string, opt EncodeOptions) []int {
	return t.AppendEncode(make([]int, 0, len(text)/3+4), text, opt)
}

// AppendEncode appends the ids of text to dst and returns the extended
// slice; see Encode. With a dst of enough capacity and words seen before,
// it allocates nothing.
func (t *Tokenizer) AppendEncode(dst []int, text string, opt EncodeOptions) []int {
	text = validUTF8(text)
	sc := t.getScratch()
	switch {
	case !opt.AddSpecialTokens && t.postPlain != nil:
		sc.ids = t.encodeText(sc.ids[:0], text, opt.SplitSpecialTokens, sc)
		dst = t.postPlain.apply(dst, sc.ids)
	case !opt.AddSpecialTokens || t.post == nil:
		dst = t.encodeText(dst, text, opt.SplitSpecialTokens, sc)
	case t.wraps:
		dst = append(dst, t.prefix...)
		dst = t.encodeText(dst, text, opt.SplitSpecialTokens, sc)
		dst = append(dst, t.suffix...)
	default:
		sc.ids = t.encodeText(sc.ids[:0], text, opt.SplitSpecialTokens, sc)
		dst = t.post.apply(dst, sc.ids)
	}
	t.putScratch(sc)
	return dst
}

// TokenID returns the id of a token's text: an added token's content or a
// vocabulary entry.
func (t *Tokenizer) TokenID(token string) (int, bool) {
	if id, ok := t.added.byContent[token]; ok {
		return id, true
	}
	id, ok := t.model.vocabulary().id(token)
	return int(id), ok
}

// Token returns the text of an id, as Hugging Face's id_to_token does: an
// added token's content (for a normalized:true token, its normalized
// form), else the vocabulary entry.
func (t *Tokenizer) Token(id int) (string, bool) {
	if _, ok := t.added.byID[id]; ok {
		if s, ok := t.added.decodeAs[id]; ok {
			return s, true
		}
		return t.added.byID[id].content, true
	}
	return t.model.vocabulary().token(id)
}

// TokenText is the text of token id decoded alone, special tokens
// included: what a sampler matches stop strings against, token by token (a
// character split across byte-level tokens shows as U+FFFD in each part).
// An unknown id is "".
func (t *Tokenizer) TokenText(id int) string {
	s, err := t.Decode([]int{id}, false)
	if err != nil {
		return ""
	}
	return s
}

// VocabSize is Hugging Face's get_vocab_size(with_added_tokens=True): the
// model's tokens plus the added tokens that are not among them.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// IsSpecial tells whether id is an added token marked special: true (the
// tokens Decode drops with skipSpecial).
func (t *Tokenizer) IsSpecial(id int) bool {
	tok, ok := t.added.byID[id]
	return ok && tok.special
}

// Config returns what tokenizer_config.json says (the zero Config when
// there was none).
func (t *Tokenizer) Config() Config { return t.cfg }

// Decode returns the text of ids, as Hugging Face's
// tokenizer.decode(ids, skip_special_tokens=skipSpecial) does: each id's
// token text, without the special added tokens when skipSpecial (a token
// is special by its text, as there), through the decoder chain; with no
// decoder, the tokens joined with spaces. An id that names no token is an
// *IDError (Hugging Face skips it silently).
func (t *Tokenizer) Decode(ids []int, skipSpecial bool) (string, error) {
	if t.byteLevelDecoder() {
		// The common chain, without the streaming machinery.
		var b []byte
		for _, id := range ids {
			tok, keep, err := t.decodeToken(id, skipSpecial)
			if err != nil {
				return "", err
			}
			if keep {
				b = appendByteLevelDecoded(b, tok)
			}
		}
		return string(appendLossy(make([]byte, 0, len(b)+8), b)), nil
	}
	p := newPipe(t.decoders, t.noDecoder)
	for _, id := range ids {
		tok, keep, err := t.decodeToken(id, skipSpecial)
		if err != nil {
			return "", err
		}
		if keep {
			p.emit(0, tok)
		}
	}
	p.flush()
	return string(p.out), nil
}

func (t *Tokenizer) byteLevelDecoder() bool {
	if len(t.decoders) != 1 {
		return false
	}
	_, ok := t.decoders[0].(byteLevelDec)
	return ok
}

// decodeToken returns the text of id and whether decoding keeps it.
func (t *Tokenizer) decodeToken(id int, skipSpecial bool) (string, bool, error) {
	tok, ok := t.Token(id)
	if !ok {
		return "", false, &IDError{ID: id, VocabSize: t.vocabSize}
	}
	if skipSpecial && t.added.special[tok] {
		return "", false, nil
	}
	return tok, true, nil
}

// StreamDecoder decodes ids one at a time, for text that arrives as it is
// sampled. Concatenating what Next and Flush return gives Decode of all
// the ids. It is not safe for concurrent use.
type StreamDecoder struct {
	t    *Tokenizer
	skip bool
	p    *pipe
}

// NewStreamDecoder starts a StreamDecoder; skipSpecial is Decode's.
func (t *Tokenizer) NewStreamDecoder(skipSpecial bool) *StreamDecoder {
	return &StreamDecoder{t: t, skip: skipSpecial, p: newPipe(t.decoders, t.noDecoder)}
}

// Next takes one more id and returns the text it completes: "" while the
// bytes so far end in an incomplete UTF-8 sequence, or while a later id
// may still change them (a run of byte-fallback tokens). An id that names
// no token is an *IDError and leaves the decoder as it was.
func (d *StreamDecoder) Next(id int) (string, error) {
	tok, keep, err := d.t.decodeToken(id, d.skip)
	if err != nil || !keep {
		return "", err
	}
	d.p.emit(0, tok)
	return d.take(), nil
}

// Flush returns the text still held back (an incomplete UTF-8 sequence
// becomes U+FFFD, as in Decode) and starts the decoder over.
func (d *StreamDecoder) Flush() string {
	d.p.flush()
	out := d.take()
	d.p = newPipe(d.t.decoders, d.t.noDecoder)
	return out
}

func (d *StreamDecoder) take() string {
	if len(d.p.out) == 0 {
		return ""
	}
	s := string(d.p.out)
	d.p.out = d.p.out[:0]
	return s
}
