package tokenizer_test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/tandemrl/tandem/tokenizer"
)

// hfReport compares tandem with Hugging Face for one model. It reports the
// first hfShownMismatches differences in full, at most hfShownPerKind of a
// kind (the string quoted, both answers, the first differing position),
// then a count per kind. It only calls t.Errorf, never t.Fatal, so it is
// safe inside hfOracle.stream.
type hfReport struct {
	t          *testing.T
	model      string
	checks     int
	mismatches int
	shown      int
	byKind     map[string]int
}

func (r *hfReport) mismatch(kind, name, text, detail string) {
	r.mismatches++
	if r.byKind == nil {
		r.byKind = map[string]int{}
	}
	r.byKind[kind]++
	if r.shown < hfShownMismatches && r.byKind[kind] <= hfShownPerKind {
		r.shown++
		r.t.Errorf("%s: %s mismatch on %s, input %s\n%s", r.model, kind, name, quoteShort(text), detail)
	}
}

func (r *hfReport) ids(kind string, c hfCase, hf, got []int) {
	r.checks++
	if slices.Equal(hf, got) {
		return
	}
	r.mismatch(kind, c.name, c.text, idsDiff(hf, got))
}

// text compares decoded texts; ids are what was decoded (shown on a
// mismatch).
func (r *hfReport) text(kind, name, input string, ids []int, hf, got string) {
	r.checks++
	if hf == got {
		return
	}
	r.mismatch(kind, name, input, "  ids:    "+idsWindow(ids, 0)+"\n"+textDiff("HF", hf, "tandem", got))
}

func (r *hfReport) checkCase(tok *tokenizer.Tokenizer, c hfCase, a hfAnswer) {
	r.ids("encode", c, a.IDs, tok.Encode(c.text, tokenizer.EncodeOptions{}))
	if c.big {
		r.checkDecode(tok, c.name, c.text, a.IDs, hfDecoded{false, a.Dec})
		return
	}
	r.ids("encode add_special_tokens", c, a.IDsAdd, tok.Encode(c.text, tokenizer.EncodeOptions{AddSpecialTokens: true}))
	r.ids("encode split_special_tokens", c, a.IDsSplit, tok.Encode(c.text, tokenizer.EncodeOptions{SplitSpecialTokens: true}))
	r.checkDecode(tok, c.name, c.text, a.IDs, hfDecoded{false, a.Dec}, hfDecoded{true, a.DecSkip})
}

// hfDecoded is Hugging Face's decode of some ids with skip_special_tokens
// = skip.
type hfDecoded struct {
	skip bool
	text string
}

// checkDecode compares Decode of ids (Hugging Face's encoding of input, or
// random ids) with each of Hugging Face's decodes, and the StreamDecoder
// with Decode.
func (r *hfReport) checkDecode(tok *tokenizer.Tokenizer, name, input string, ids []int, hf ...hfDecoded) {
	for _, want := range hf {
		kind := "decode"
		if want.skip {
			kind = "decode skip_special_tokens"
		}
		got, err := tok.Decode(ids, want.skip)
		if err != nil {
			r.checks++
			r.mismatch(kind, name, input, fmt.Sprintf("  ids:    %s\n  tandem error: %v\n  HF:     %s", idsWindow(ids, 0), err, quoteShort(want.text)))
			continue
		}
		r.text(kind, name, input, ids, want.text, got)
		r.checks++
		if st := streamDecode(tok, ids, want.skip); st != got {
			r.mismatch(fmt.Sprintf("StreamDecoder (skip=%v) vs Decode", want.skip), name, input,
				"  ids:    "+idsWindow(ids, 0)+"\n"+textDiff("Decode", got, "stream", st))
		}
	}
}

// checkPrefixes compares Decode of every prefix of ids with Hugging Face's.
func (r *hfReport) checkPrefixes(tok *tokenizer.Tokenizer, ids []int, hf []string) {
	for i, want := range hf {
		p := ids[:i+1]
		got, err := tok.Decode(p, false)
		if err != nil {
			got = "error: " + err.Error()
		}
		r.text("decode prefix", fmt.Sprintf("prefix %d of %v", i+1, ids), "", p, want, got)
	}
}

// checkVocab compares VocabSize with get_vocab_size(with_added_tokens=True),
// TokenID with every entry of get_vocab(with_added_tokens=True), and Token
// with id_to_token of every id.
func (r *hfReport) checkVocab(tok *tokenizer.Tokenizer, size int, vocab map[string]int, tokens []*string) {
	r.checks++
	if got := tok.VocabSize(); got != size {
		r.mismatch("VocabSize", "vocabulary", "", fmt.Sprintf("  HF:     %d\n  tandem: %d", size, got))
	}
	toks := make([]string, 0, len(vocab))
	for s := range vocab {
		toks = append(toks, s)
	}
	sort.Strings(toks) // deterministic order of the reported mismatches
	for _, s := range toks {
		r.checks++
		id, ok := tok.TokenID(s)
		if !ok || id != vocab[s] {
			r.mismatch("TokenID", "vocabulary", s, fmt.Sprintf("  HF:     %d\n  tandem: %d, %v", vocab[s], id, ok))
		}
	}
	for id, want := range tokens {
		r.checks++
		got, ok := tok.Token(id)
		if (want == nil) == ok || (ok && got != *want) {
			hf := "none"
			if want != nil {
				hf = fmt.Sprintf("%q", *want)
			}
			r.mismatch("Token", fmt.Sprintf("id %d", id), "", fmt.Sprintf("  HF:     %s\n  tandem: %q, %v", hf, got, ok))
		}
	}
	r.checks++
	if got, ok := tok.Token(len(tokens)); ok {
		r.mismatch("Token", fmt.Sprintf("id %d (past the vocabulary)", len(tokens)), "", fmt.Sprintf("  HF:     none\n  tandem: %q", got))
	}
	const absent = "\x00not a token of any vocabulary\x00"
	if _, in := vocab[absent]; !in {
		r.checks++
		if id, ok := tok.TokenID(absent); ok {
			r.mismatch("TokenID", "absent token", absent, fmt.Sprintf("  HF: none\n  tandem: %d", id))
		}
	}
}

// finish reports the counts per kind when anything differed.
func (r *hfReport) finish() {
	if r.mismatches == 0 {
		return
	}
	kinds := make([]string, 0, len(r.byKind))
	for k := range r.byKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	for _, k := range kinds {
		fmt.Fprintf(&b, "\n  %-36s %d", k, r.byKind[k])
	}
	r.t.Errorf("%s: %d mismatches in %d checks (%d shown above):%s", r.model, r.mismatches, r.checks, r.shown, b.String())
}

// streamDecode is the concatenation of a StreamDecoder's output over ids.
func streamDecode(tok *tokenizer.Tokenizer, ids []int, skip bool) string {
	d := tok.NewStreamDecoder(skip)
	var b strings.Builder
	for _, id := range ids {
		s, err := d.Next(id)
		if err != nil {
			fmt.Fprintf(&b, "<error at id %d: %v>", id, err)
		}
		b.WriteString(s)
	}
	b.WriteString(d.Flush())
	return b.String()
}

// idsDiff shows both id lists around their first difference.
func idsDiff(hf, got []int) string {
	i := 0
	for i < len(hf) && i < len(got) && hf[i] == got[i] {
		i++
	}
	return fmt.Sprintf("  first difference at position %d (HF %d ids, tandem %d ids)\n  HF:     %s\n  tandem: %s",
		i, len(hf), len(got), idsWindow(hf, i), idsWindow(got, i))
}

// idsWindow prints ids in full when short, else a window around position i.
func idsWindow(ids []int, i int) string {
	const before, after = 8, 24
	if len(ids) <= before+after {
		return fmt.Sprint(ids)
	}
	lo, hi := max(0, i-before), min(len(ids), i+after)
	s := fmt.Sprint(ids[lo:hi])
	if lo > 0 {
		s = fmt.Sprintf("[… %d ids] ", lo) + s
	}
	if hi < len(ids) {
		s += fmt.Sprintf(" [… %d ids]", len(ids)-hi)
	}
	return s
}

// textDiff shows both texts around their first differing byte, each with
// who gave it.
func textDiff(wantBy, want, gotBy, got string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	return fmt.Sprintf("  first difference at byte %d (%s %d bytes, %s %d bytes)\n  %-7s %s\n  %-7s %s",
		i, wantBy, len(want), gotBy, len(got), wantBy+":", quoteWindow(want, i), gotBy+":", quoteWindow(got, i))
}

// quoteShort quotes s, cut to its first 300 bytes when longer.
func quoteShort(s string) string {
	if len(s) <= 300 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q… (%d bytes)", strings.ToValidUTF8(s[:300], ""), len(s))
}

// quoteWindow quotes s around byte i when s is long.
func quoteWindow(s string, i int) string {
	if len(s) <= 300 {
		return fmt.Sprintf("%q", s)
	}
	lo, hi := max(0, i-60), min(len(s), i+200)
	return fmt.Sprintf("[… %d bytes] %q [… %d bytes]", lo, s[lo:hi], len(s)-hi)
}
