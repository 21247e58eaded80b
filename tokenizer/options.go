package tokenizer

// EncodeOptions are the choices Hugging Face's encode offers.
type EncodeOptions struct {
	// AddSpecialTokens runs the post-processor, as Hugging Face's
	// add_special_tokens=True does (Llama 3.1's file prepends
	// <|begin_of_text|>; Qwen3's adds nothing).
	AddSpecialTokens bool
	// SplitSpecialTokens encodes the text of special added tokens
	// (special: true) as ordinary text, as Hugging Face's
	// encode_special_tokens (transformers' split_special_tokens) does:
	// user content cannot forge a turn marker. Non-special added tokens,
	// such as Qwen3's <think>, still match.
	SplitSpecialTokens bool
}

// Config is what tokenizer_config.json says, beside tokenizer.json: the
// special tokens' text, the chat template and transformers' BOS/EOS rule.
type Config struct {
	// BOSToken, EOSToken, PadToken and UnkToken are the tokens' text
	// ("" when the file does not name one). A token given as an object
	// ({"content": ...}) is read by its content.
	BOSToken, EOSToken, PadToken, UnkToken string
	// AddBOSToken and AddEOSToken are transformers' add_bos_token and
	// add_eos_token (nil when absent).
	AddBOSToken, AddEOSToken *bool
	// ChatTemplate is the Jinja chat template: chat_template when it is a
	// string, or the one named "default" when it is a list of named
	// templates ("" when there is none).
	ChatTemplate string
	// ChatTemplates holds every named template when chat_template is a
	// list of {name, template} (nil when it is a string or absent), e.g.
	// "default" and "tool_use".
	ChatTemplates map[string]string
	// TokenizerClass is tokenizer_class (e.g. "Qwen2Tokenizer").
	TokenizerClass string
	// ModelMaxLength is model_max_length (0 when absent or not an integer).
	ModelMaxLength int
}
