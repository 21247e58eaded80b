package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// The decoder chain, streaming: each step is a stage that takes units one
// at a time and passes its output on. Before the first joining step
// (ByteLevel, Fuse) a unit is a token; after it, a unit is the next chunk
// of the one joined string, and a stage must give the same text as its
// step gives on the whole string. A stage holds back what later units may
// still change (an incomplete UTF-8 sequence, a run of "<0xNN>" bytes, a
// partial match) and lets it go in flush.

type stage interface {
	push(p *pipe, i int, s string)
	flush(p *pipe, i int)
}

// pipe runs a chain of stages and collects the output of the last.
type pipe struct {
	stages []stage
	out    []byte
}

// emit gives s to stage i (the output when i is past the last stage).
func (p *pipe) emit(i int, s string) {
	if i >= len(p.stages) {
		p.out = append(p.out, s...)
		return
	}
	p.stages[i].push(p, i, s)
}

func (p *pipe) flush() {
	for i, st := range p.stages {
		st.flush(p, i)
	}
}

func newPipe(decs []decoder, noDecoder bool) *pipe {
	p := &pipe{}
	if noDecoder {
		p.stages = []stage{&spaceJoin{}}
		return p
	}
	joined := false
	for _, d := range decs {
		p.stages = append(p.stages, d.stage(joined))
		joined = joined || d.joins()
	}
	return p
}

// spaceJoin joins tokens with " ", as Hugging Face does without a decoder.
type spaceJoin struct{ started bool }

func (s *spaceJoin) push(p *pipe, i int, t string) {
	if s.started {
		p.emit(i+1, " ")
	}
	s.started = true
	p.emit(i+1, t)
}
func (*spaceJoin) flush(*pipe, int) {}

// holdAll keeps a joined string whole and runs the step on it at the end:
// for steps whose output on a joined string depends on all of it.
type holdAll struct {
	apply func(string) string
	buf   []byte
}

func (h *holdAll) push(_ *pipe, _ int, s string) { h.buf = append(h.buf, s...) }
func (h *holdAll) flush(p *pipe, i int) {
	p.emit(i+1, h.apply(string(h.buf)))
	h.buf = nil
}

func oneToken(d decoder) func(string) string {
	return func(s string) string { return strings.Join(d.chain([]string{s}), "") }
}

// passOn hands each unit on unchanged (Fuse: the joined string is the
// concatenation of the units either way).
type passOn struct{}

func (passOn) push(p *pipe, i int, s string) { p.emit(i+1, s) }
func (passOn) flush(*pipe, int)              {}

func (fuseDec) stage(bool) stage { return passOn{} }

// byteLevelStage decodes tokens to bytes and bytes to text, holding an
// incomplete UTF-8 sequence at the end until the next token tells whether
// it completes.
type byteLevelStage struct {
	pending []byte
	buf     []byte
}

func (d byteLevelDec) stage(joined bool) stage {
	if joined {
		return &holdAll{apply: oneToken(d)}
	}
	return &byteLevelStage{}
}

func (s *byteLevelStage) push(p *pipe, i int, t string) {
	s.pending = appendByteLevelDecoded(s.pending, t)
	n := completePrefix(s.pending)
	if n == 0 {
		return
	}
	s.buf = appendLossy(s.buf[:0], s.pending[:n])
	s.pending = append(s.pending[:0], s.pending[n:]...)
	p.emit(i+1, string(s.buf))
}

func (s *byteLevelStage) flush(p *pipe, i int) {
	if len(s.pending) > 0 {
		p.emit(i+1, string(appendLossy(nil, s.pending)))
		s.pending = s.pending[:0]
	}
}

// completePrefix returns how many bytes of b lossy decoding can settle
// now: all but a final sequence that is valid so far and incomplete.
func completePrefix(b []byte) int {
	// A sequence is at most 4 bytes: look at the last 3 for its start.
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < 0x80 {
			return len(b) // ASCII: everything after it is settled too
		}
		if c >= 0xC0 {
			if n := seqLen(c); n > k && validPrefix(b[len(b)-k:]) == k {
				return len(b) - k
			}
			return len(b)
		}
	}
	return len(b)
}

// metaspaceStage: a unit of a joined string is part of token 0.
type metaspaceStage struct {
	d     metaspaceDec
	count int
}

func (d metaspaceDec) stage(joined bool) stage {
	if joined {
		return &metaspaceStage{d: d, count: -1}
	}
	return &metaspaceStage{d: d}
}

func (s *metaspaceStage) push(p *pipe, i int, t string) {
	first := s.count <= 0
	if s.count >= 0 {
		s.count++
	}
	p.emit(i+1, s.d.apply(t, first))
}
func (*metaspaceStage) flush(*pipe, int) {}

// byteFallbackStage holds a run of "<0xNN>" tokens until the run ends.
type byteFallbackStage struct{ run []byte }

func (d byteFallbackDec) stage(joined bool) stage {
	if joined {
		return &holdAll{apply: oneToken(d)}
	}
	return &byteFallbackStage{}
}

func (s *byteFallbackStage) push(p *pipe, i int, t string) {
	if b, ok := fallbackByte(t); ok {
		s.run = append(s.run, b)
		return
	}
	s.flush(p, i)
	p.emit(i+1, t)
}

func (s *byteFallbackStage) flush(p *pipe, i int) {
	if len(s.run) == 0 {
		return
	}
	if utf8.Valid(s.run) {
		p.emit(i+1, string(s.run))
	} else {
		for range s.run {
			p.emit(i+1, "\uFFFD")
		}
	}
	s.run = s.run[:0]
}

// stripStage strips each token, or the ends of a joined string.
type stripStage struct {
	d      stripDec
	joined bool
	// joined: whether the leading cut is settled, how many characters it
	// took, and the text not yet passed on (the end may still be cut).
	leadDone bool
	leadCut  int
	pend     string
}

func (d stripDec) stage(joined bool) stage { return &stripStage{d: d, joined: joined} }

func (s *stripStage) push(p *pipe, i int, t string) {
	if !s.joined {
		p.emit(i+1, s.d.apply(t))
		return
	}
	s.pend += t
	for !s.leadDone && s.pend != "" {
		r, n := utf8.DecodeRuneInString(s.pend)
		if s.leadCut >= s.d.start || r != s.d.content {
			s.leadDone = true
			break
		}
		s.pend = s.pend[n:]
		s.leadCut++
	}
	if !s.leadDone {
		return
	}
	// Hold back the last (up to stop) copies of content.
	hi, k := len(s.pend), 0
	for k < s.d.stop && hi > 0 {
		r, n := utf8.DecodeLastRuneInString(s.pend[:hi])
		if r != s.d.content {
			break
		}
		hi -= n
		k++
	}
	if hi > 0 {
		p.emit(i+1, s.pend[:hi])
		s.pend = s.pend[hi:]
	}
}

func (s *stripStage) flush(p *pipe, i int) {
	if !s.joined {
		return
	}
	// pend is the held trailing run (at most stop copies): cut.
	s.pend = ""
}

// replaceStage replaces per token, or streams a literal replacement over
// a joined string, holding back a suffix that may begin a match.
type replaceStage struct {
	d    replaceDec
	sc   scratch
	lit  string
	pend string
}

func (d replaceDec) stage(joined bool) stage {
	lit, isLit := d.pattern.(literalFinder)
	if joined && (!isLit || lit.lit == "") {
		return &holdAll{apply: oneToken(d)}
	}
	if joined {
		return &replaceStage{d: d, lit: lit.lit}
	}
	return &replaceStage{d: d}
}

func (s *replaceStage) push(p *pipe, i int, t string) {
	if s.lit == "" {
		p.emit(i+1, replaceAll(t, s.d.pattern, s.d.content, &s.sc))
		return
	}
	s.pend += t
	var b strings.Builder
	for {
		j := strings.Index(s.pend, s.lit)
		if j < 0 {
			break
		}
		b.WriteString(s.pend[:j])
		b.WriteString(s.d.content)
		s.pend = s.pend[j+len(s.lit):]
	}
	keep := 0
	for k := min(len(s.lit)-1, len(s.pend)); k > 0; k-- {
		if strings.HasSuffix(s.pend, s.lit[:k]) {
			keep = k
			break
		}
	}
	b.WriteString(s.pend[:len(s.pend)-keep])
	s.pend = s.pend[len(s.pend)-keep:]
	if b.Len() > 0 {
		p.emit(i+1, b.String())
	}
}

func (s *replaceStage) flush(p *pipe, i int) {
	if s.pend != "" {
		p.emit(i+1, s.pend)
		s.pend = ""
	}
}

// bpeDecStage holds one token back: only the last token loses its suffix
// without a space.
type bpeDecStage struct {
	d    bpeDec
	prev string
	has  bool
}

func (d bpeDec) stage(joined bool) stage {
	if joined {
		return &holdAll{apply: oneToken(d)}
	}
	return &bpeDecStage{d: d}
}

func (s *bpeDecStage) push(p *pipe, i int, t string) {
	if s.has {
		p.emit(i+1, strings.ReplaceAll(s.prev, s.d.suffix, " "))
	}
	s.prev, s.has = t, true
}

func (s *bpeDecStage) flush(p *pipe, i int) {
	if s.has {
		p.emit(i+1, strings.ReplaceAll(s.prev, s.d.suffix, ""))
		s.has = false
	}
}
