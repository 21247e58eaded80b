// Package tokenizer reads a Hugging Face tokenizer.json (and the
// tokenizer_config.json beside it) and encodes and decodes exactly as
// Hugging Face's tokenizers crate does with that file, in pure Go: id for
// id with tokenizers 0.23.2 on Qwen3, Llama 3.1, DeepSeek-V3 and Gemma 3.
//
// # Pipeline
//
// Encode follows the crate's encode_single_sequence:
//
//  1. added tokens with normalized: false are found in the raw text
//     (leftmost-longest over all of them, with their special, lstrip,
//     rstrip and single_word flags);
//  2. the normalizer runs on each stretch between them (NFC, NFD, NFKC,
//     NFKD, Lowercase, Strip, StripAccents, Nmt, Prepend, Replace,
//     ByteLevel, Sequence);
//  3. added tokens with normalized: true are found in the normalized text;
//  4. the pre-tokenizer cuts words (Split, ByteLevel, Metaspace, Digits,
//     Whitespace, WhitespaceSplit, Punctuation, BertPreTokenizer,
//     CharDelimiterSplit, Sequence);
//  5. the model turns each word into ids (BPE, with string or pair
//     merges, ignore_merges, byte_fallback, unk_token, fuse_unk,
//     continuing_subword_prefix and end_of_word_suffix; WordLevel);
//  6. with EncodeOptions.AddSpecialTokens, the post-processor adds its
//     tokens (TemplateProcessing, ByteLevel, RobertaProcessing,
//     BertProcessing, Sequence).
//
// The post-processor is the file's own: transformers rewrites it for some
// classes (LlamaTokenizerFast builds one from add_bos_token), this package
// does not; Config reports add_bos_token for callers that want to.
//
// Decode maps ids to their tokens, drops the special added tokens when
// asked, and runs the decoder chain (ByteLevel, Metaspace, ByteFallback,
// Fuse, Strip, Replace, BPEDecoder, Sequence). A StreamDecoder does the
// same one id at a time and holds back text that later ids may still
// change, so that its pieces concatenate to Decode's result.
//
// # Regular expressions
//
// A Split pattern runs on Oniguruma in the crate. Here it runs on the
// hand-written splitters of internal/splitfast when the pattern is one
// they know (the GPT-2, Qwen2/Qwen3 and Llama 3 patterns), else on
// github.com/dlclark/regexp2/v2 in its default mode, after onigPattern
// has brought the Unicode classes to Oniguruma's Unicode 16.0 and its
// inline options to Ruby's meaning; ^ and $ match at line ends, as
// Oniguruma's do. regexp2's \w and \b keep .NET's definition.
//
// # Input text
//
// Text that is not valid UTF-8 is read as Rust's String::from_utf8_lossy
// reads it: each maximal invalid byte sequence becomes one U+FFFD.
//
// The crate's Unicode normalization has Unicode 9.0's data; so does this
// package's (characters assigned since are left as they are), while its
// Split classes follow Oniguruma's Unicode 16.0.
//
// # Cost
//
// A Tokenizer keeps a bounded cache of the ids of recent words (shorter
// than 256 bytes, as Hugging Face's). Encoding a word seen before costs a
// hash lookup and no allocation; AppendEncode into a slice with room
// allocates nothing then. Parsing Qwen3's 11 MB tokenizer.json takes
// about 0.13 s, Gemma 3's 33 MB about 0.4 s (0.2 s and 0.75 s for the
// first Load in a fresh process, which pays for its new memory); the
// loaded tokenizers hold 16 MB and 39 MB.
//
// # Not supported
//
// Unigram and WordPiece models, the Precompiled and Bert normalizers, the
// UnicodeScripts and FixedLength pre-tokenizers, the WordPiece and CTC
// decoders, BPE dropout, and truncation or padding in tokenizer.json are
// reported at load as a *LoadError that matches ErrUnsupported.
//
// Where this package knowingly departs from the crate: an unk_token that
// is not in the vocabulary is a load error (the crate fails the encode
// that needs it); an id that names no token is an *IDError in Decode (the
// crate skips it); Hugging Face panics on some Strip decoder inputs (cuts
// that cross), where Decode gives an empty token; Metaspace's
// prepend_scheme "first" asks whether a piece starts the text, which
// differs from the crate's offset test only when a normalizer removed the
// text's first characters and a splitting pre-tokenizer runs before
// Metaspace.
package tokenizer
