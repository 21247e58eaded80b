package chat

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tandemrl/tandem/tokenizer"
)

// Tokenizer is what a renderer needs from a tokenizer. *tokenizer.Tokenizer
// satisfies it.
type Tokenizer interface {
	// Encode encodes text as Hugging Face's encode does.
	Encode(text string, opt tokenizer.EncodeOptions) []int
	// Decode decodes ids, keeping or skipping special tokens.
	Decode(ids []int, skipSpecial bool) (string, error)
	// TokenID is the id of a token given by its text (an added token such
	// as "<|im_end|>").
	TokenID(token string) (int, bool)
}

// Renderer renders conversations for one model family.
type Renderer interface {
	// Name is the name New knows the renderer by.
	Name() string

	// GenerationPrompt is the token ids to sample the next assistant turn
	// from: BOS, every message, the assistant header and, when not "", the
	// prefill text (encoded without special tokens). The caller owns the
	// returned slice.
	GenerationPrompt(messages []Message, prefill string) ([]int, error)

	// Supervised is a training example for the conversation: its ids and
	// one weight per id. Output tokens (message text and its end-of-turn
	// token) of the messages on selects get weight 1, everything else 0,
	// except that AllTokens also weights headers. Tokens the generation
	// prompt supplies (a prefilled empty think block) get 0. It fails when
	// no token would get weight.
	Supervised(messages []Message, on TrainOn) (Example, error)

	// StopTokens are the ids that end an assistant turn (the end-of-turn
	// token first, then end-of-sequence ids); a sampler keeps the one it
	// stopped on at the end of the completion.
	StopTokens() []int

	// StopStrings are the texts that end an assistant turn, for renderers
	// whose turns end in plain text (role_colon).
	StopStrings() []string

	// Parse reads a sampled completion (the ids after the generation
	// prompt, stop token included) back into an assistant message, and
	// says how it ended. The error is for ids the tokenizer cannot decode;
	// a truncated or malformed completion is a Termination, not an error.
	Parse(completion []int) (Message, Termination, error)

	// HasExtensionProperty reports whether each turn's generation prompt
	// is a prefix of every later one for the same conversation, so a
	// multi-turn episode is one growing sequence.
	HasExtensionProperty() bool
}

// Example is a supervised training example: Tokens and one weight per token.
type Example struct {
	Tokens  []int
	Weights []float32
}

// TrainOn selects which messages' output tokens carry loss. The names are
// tinker-cookbook's TrainOnWhat values.
type TrainOn string

const (
	// LastAssistantMessage trains the final message, which must be an
	// assistant message. The zero TrainOn means this.
	LastAssistantMessage TrainOn = "last_assistant_message"
	// LastAssistantTurn trains every assistant message after the last user
	// message (a final answer and the tool calls leading to it).
	LastAssistantTurn TrainOn = "last_assistant_turn"
	// AllAssistantMessages trains every assistant message. With a renderer
	// lacking the extension property, earlier turns are then trained in a
	// context that differs from their prompt; see SupervisedExamples.
	AllAssistantMessages TrainOn = "all_assistant_messages"
	// AllMessages trains every message's output, whatever its role.
	AllMessages TrainOn = "all_messages"
	// AllTokens trains every token but BOS, headers included.
	AllTokens TrainOn = "all_tokens"
	// AllUserAndSystemMessages trains user and system messages only.
	AllUserAndSystemMessages TrainOn = "all_user_and_system_messages"
	// Customized trains the messages whose Trainable is true; every
	// message must set Trainable.
	Customized TrainOn = "customized"
)

// trainOns lists the valid values, for messages.
var trainOns = []TrainOn{LastAssistantMessage, LastAssistantTurn, AllAssistantMessages,
	AllMessages, AllTokens, AllUserAndSystemMessages, Customized}

// normalize maps the zero value to its default and checks the value.
func (on TrainOn) normalize() (TrainOn, error) {
	if on == "" {
		return LastAssistantMessage, nil
	}
	for _, v := range trainOns {
		if on == v {
			return on, nil
		}
	}
	names := make([]string, len(trainOns))
	for i, v := range trainOns {
		names[i] = string(v)
	}
	return "", fmt.Errorf("chat: unknown TrainOn %q (want one of %s)", string(on), strings.Join(names, ", "))
}

// Termination is how a sampled completion ended.
type Termination int

const (
	// Malformed: the completion has no stop token or stop string (it was
	// truncated, usually by max_tokens), or has tokens after its stop
	// token, or more than one stop string.
	Malformed Termination = iota
	// StopSequence: the renderer's end-of-turn token or stop string ended
	// it.
	StopSequence
	// EOS: an end-of-sequence token that is not the end-of-turn token
	// ended it (<|endoftext|> for Qwen3, <|end_of_text|> for Llama 3, the
	// tokenizer's EOS for role_colon).
	EOS
)

// String is the termination's tinker-cookbook name.
func (t Termination) String() string {
	switch t {
	case StopSequence:
		return "stop_sequence"
	case EOS:
		return "eos"
	case Malformed:
		return "malformed"
	}
	return fmt.Sprintf("Termination(%d)", int(t))
}

// Clean reports whether the completion ended on a stop signal or EOS.
func (t Termination) Clean() bool { return t == StopSequence || t == EOS }

var (
	// ErrEmptyConversation: a prompt or example needs at least one message.
	ErrEmptyConversation = errors.New("chat: empty conversation")
	// ErrNothingToTrain: the supervised example would have no weighted
	// token.
	ErrNothingToTrain = errors.New("chat: no token of the example is trained")
	// ErrUnsupported: the renderer cannot render part of a message (tool
	// calls for Llama 3, reasoning for Gemma 3, ...).
	ErrUnsupported = errors.New("chat: not supported by this renderer")
	// ErrUnknownRenderer: New does not know the name.
	ErrUnknownRenderer = errors.New("chat: unknown renderer")
)

// RoleError reports a message whose role the renderer does not render.
type RoleError struct {
	Renderer string   // the renderer's name
	Index    int      // the message's index in the conversation
	Role     string   // the role it has
	Accepted []string // the roles the renderer renders
	Reason   string   // when set, why the role is not accepted there
}

func (e *RoleError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("chat: %s: message %d has role %q: %s", e.Renderer, e.Index, e.Role, e.Reason)
	}
	return fmt.Sprintf("chat: %s: message %d has role %q; %s renders roles %s",
		e.Renderer, e.Index, e.Role, e.Renderer, strings.Join(e.Accepted, ", "))
}
