package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// A decoder is one step of Hugging Face's decoder chain (decode_chain):
// it maps the list of token strings to a new list. These are the
// reference forms, written as the crate's; Decode and StreamDecoder run
// the streaming stages of stream.go, which the tests hold equal to them.
type decoder interface {
	chain(toks []string) []string
	// stage returns a fresh streaming stage for this step; joined tells
	// whether the steps before it fused the tokens into one string.
	stage(joined bool) stage
	// joins tells whether the step's output is one string.
	joins() bool
}

// byteLevelDec maps each token's characters back to bytes (a token with
// a character outside the alphabet is taken as its own UTF-8), joins them
// and decodes the bytes as Rust's String::from_utf8_lossy does.
type byteLevelDec struct{}

func (byteLevelDec) chain(toks []string) []string {
	var b []byte
	for _, t := range toks {
		b = appendByteLevelDecoded(b, t)
	}
	return []string{string(appendLossy(nil, b))}
}

func (byteLevelDec) joins() bool { return true }

// metaspaceDec turns the replacement character back into a space, and
// drops it from the first token unless prepend_scheme is "never".
type metaspaceDec struct {
	repl   rune
	scheme prependScheme
}

func (d metaspaceDec) chain(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = d.apply(t, i == 0)
	}
	return out
}

func (d metaspaceDec) apply(t string, first bool) string {
	if !strings.ContainsRune(t, d.repl) {
		return t
	}
	return strings.Map(func(r rune) rune {
		if r != d.repl {
			return r
		}
		if first && d.scheme != prependNever {
			return -1
		}
		return ' '
	}, t)
}

func (metaspaceDec) joins() bool { return false }

// byteFallbackDec turns runs of "<0xNN>" tokens into text: the run's bytes
// when they are valid UTF-8, else one U+FFFD per byte.
type byteFallbackDec struct{}

func (byteFallbackDec) chain(toks []string) []string {
	var out []string
	var run []byte
	flush := func() {
		if len(run) == 0 {
			return
		}
		if utf8.Valid(run) {
			out = append(out, string(run))
		} else {
			for range run {
				out = append(out, "\uFFFD")
			}
		}
		run = run[:0]
	}
	for _, t := range toks {
		if b, ok := fallbackByte(t); ok {
			run = append(run, b)
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

func (byteFallbackDec) joins() bool { return false }

// fallbackByte reads a "<0xNN>" token as Hugging Face does: six bytes,
// "<0x", two characters u8::from_str_radix(_, 16) accepts, ">".
func fallbackByte(t string) (byte, bool) {
	if len(t) != 6 || !strings.HasPrefix(t, "<0x") || t[5] != '>' {
		return 0, false
	}
	h := t[3:5]
	if h[0] == '+' {
		h = h[1:]
	}
	v := 0
	for i := 0; i < len(h); i++ {
		c := h[i]
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | int(c-'0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | int(c-'a'+10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | int(c-'A'+10)
		default:
			return 0, false
		}
	}
	return byte(v), true
}

// fuseDec joins all tokens into one.
type fuseDec struct{}

func (fuseDec) chain(toks []string) []string { return []string{strings.Join(toks, "")} }
func (fuseDec) joins() bool                  { return true }

// stripDec removes up to start leading and stop trailing copies of a
// character from each token.
type stripDec struct {
	content     rune
	start, stop int
}

func (d stripDec) chain(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		out[i] = d.apply(t)
	}
	return out
}

func (d stripDec) apply(t string) string {
	lo := 0
	for k := 0; k < d.start && lo < len(t); k++ {
		r, n := utf8.DecodeRuneInString(t[lo:])
		if r != d.content {
			break
		}
		lo += n
	}
	hi := len(t)
	for k := 0; k < d.stop && hi > 0; k++ {
		r, n := utf8.DecodeLastRuneInString(t[:hi])
		if r != d.content {
			break
		}
		hi -= n
	}
	if lo >= hi {
		// Hugging Face panics when the cuts cross; an empty token is the
		// sensible reading.
		return ""
	}
	return t[lo:hi]
}

func (stripDec) joins() bool { return false }

// replaceDec replaces the matches of a pattern in each token.
type replaceDec struct {
	pattern finder
	content string
}

func (d replaceDec) chain(toks []string) []string {
	out := make([]string, len(toks))
	var sc scratch
	for i, t := range toks {
		out[i] = replaceAll(t, d.pattern, d.content, &sc)
	}
	return out
}

func (replaceDec) joins() bool { return false }

// bpeDec is the BPEDecoder: the end-of-word suffix becomes a space, or
// nothing in the last token.
type bpeDec struct{ suffix string }

func (d bpeDec) chain(toks []string) []string {
	out := make([]string, len(toks))
	for i, t := range toks {
		rep := " "
		if i == len(toks)-1 {
			rep = ""
		}
		out[i] = strings.ReplaceAll(t, d.suffix, rep)
	}
	return out
}

func (bpeDec) joins() bool { return false }

// decodeChain runs the reference chain on tokens; with no decoder,
// tokens are joined with spaces.
func decodeChain(decs []decoder, toks []string, noDecoder bool) string {
	if noDecoder {
		return strings.Join(toks, " ")
	}
	for _, d := range decs {
		toks = d.chain(toks)
	}
	return strings.Join(toks, "")
}
