// Package splitfast splits text as the regular expressions of the common
// byte-level BPE pre-tokenizers do (Qwen2/Qwen3, Llama 3 / tiktoken
// cl100k, GPT-2), by hand, in linear time.
//
// The splitters reproduce what Oniguruma (the engine of Hugging Face
// tokenizers) reports for these patterns: leftmost-first alternation,
// greedy quantifiers with backtracking, and Oniguruma's character classes:
//
//   - \s is Unicode White_Space (unicode.IsSpace);
//   - \p{L} is unicode.IsLetter plus the letters that Unicode 15.1 and 16.0
//     added (CJK Extension I U+2EBF0–U+2EE5D, Egyptian Hieroglyphs
//     Extended-A, Garay, Kirat Rai, …): Oniguruma's tables are Unicode 16.0,
//     Go 1.26's are 15.0;
//   - \p{N} is unicode.IsNumber (Nd, Nl and No) plus the digits of those
//     versions (Garay, Kirat Rai, outlined digits, …);
//   - (?i:…) uses Unicode simple case folding, so "'ſ" matches as "'s".
//
// Each invalid UTF-8 byte counts as one character that is neither a space,
// a letter nor a number (as U+FFFD would be), which is how
// github.com/dlclark/regexp2 decodes strings. Hugging Face never sees invalid
// UTF-8 (its input is a Rust &str).
//
// Every character starts a match of each of these patterns, so the matches
// tile the input: there are no gaps and no empty matches.
//
// # Cost
//
// A Matcher runs in time linear in len(s), with no backtracking and no
// stack, and allocates nothing when dst has room for the matches. Where
// Oniguruma backtracks, one look decides: each greedy run is followed in its
// alternative by nothing or by a test of the next character, and the two
// alternatives that give characters back from a run of whitespace
// (\s*[\r\n]+ and \s+(?!\S)) are resolved from what one scan of the run
// records: its end, where its last character starts and where its last line
// break is. The part of a run left unconsumed has no line break (or is a
// single character), so it is rescanned at most once, and every character is
// decoded a small, bounded number of times.
package splitfast

// The pre-tokenizer patterns this package knows, exactly as they appear in
// tokenizer.json files (Split pre-tokenizer, pattern.Regex) and in the
// ByteLevel pre-tokenizer.
const (
	// PatternQwen2 is the split regex of Qwen2 and Qwen3: one digit per match.
	PatternQwen2 = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

	// PatternCL100K is the split regex of Llama 3 and tiktoken's cl100k_base:
	// up to three digits per match.
	PatternCL100K = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

	// PatternGPT2 is the regex the ByteLevel pre-tokenizer splits with when
	// use_regex is true.
	PatternGPT2 = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// Matcher appends to dst the [start, end) byte ranges of the matches of
// its pattern in s, in order, as Oniguruma's find_iter would report them
// (leftmost-first, non-overlapping), and returns dst.
//
// A Matcher is safe for concurrent use. It keeps no reference to s or dst;
// it allocates only when dst must grow.
type Matcher func(dst [][2]int, s string) [][2]int

// For returns the Matcher of pattern if pattern is exactly one of the
// patterns this package knows (PatternQwen2, PatternCL100K, PatternGPT2),
// or nil. The comparison is by exact string: a pattern that differs in any
// byte, even one that means the same, gets nil.
func For(pattern string) Matcher {
	switch pattern {
	case PatternQwen2:
		return splitQwen2
	case PatternCL100K:
		return splitCL100K
	case PatternGPT2:
		return splitGPT2
	}
	return nil
}
