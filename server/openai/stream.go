package openai

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/tandemrl/tandem/tokenizer"
)

// StreamOptions is vLLM's StreamOptions. A missing include_usage means
// true, as in vLLM's model; without stream_options no usage is sent.
type StreamOptions struct {
	IncludeUsage         *bool `json:"include_usage"`
	ContinuousUsageStats *bool `json:"continuous_usage_stats"`
}

// streaming is a request's "stream" and "stream_options", checked.
type streaming struct {
	on         bool
	usage      bool // a last chunk with no choices carries the usage
	everyChunk bool // every chunk carries the usage so far
}

func newStreaming(f *samplingFields) (streaming, error) {
	st := streaming{on: f.Stream != nil && *f.Stream}
	if !st.on || !present(f.StreamOptions) {
		return st, nil
	}
	var o StreamOptions
	if err := json.Unmarshal(f.StreamOptions, &o); err != nil {
		return streaming{}, badRequest("stream_options", "field \"stream_options\" must be an object with boolean include_usage and continuous_usage_stats: %v", err)
	}
	st.usage = o.IncludeUsage == nil || *o.IncludeUsage
	st.everyChunk = st.usage && o.ContinuousUsageStats != nil && *o.ContinuousUsageStats
	return st, nil
}

// CompletionStreamChoice is vLLM's CompletionResponseStreamChoice: the
// text (and log-probs, token ids) of one more token of choice Index;
// FinishReason is null until the choice's last chunk.
type CompletionStreamChoice struct {
	Index          int                 `json:"index"`
	Text           string              `json:"text"`
	Logprobs       *CompletionLogProbs `json:"logprobs"`
	FinishReason   *string             `json:"finish_reason"`
	StopReason     any                 `json:"stop_reason"`
	TokenIDs       []int               `json:"token_ids,omitempty"`
	PromptTokenIDs []int               `json:"prompt_token_ids,omitempty"`
}

// CompletionStreamResponse is vLLM's CompletionStreamResponse, one
// server-sent event of a streamed completion.
type CompletionStreamResponse struct {
	ID      string                   `json:"id"`
	Object  string                   `json:"object"`
	Created int64                    `json:"created"`
	Model   string                   `json:"model"`
	Choices []CompletionStreamChoice `json:"choices"`
	Usage   *Usage                   `json:"usage"`

	SystemFingerprint *string `json:"system_fingerprint"`
	Metrics           any     `json:"metrics"`
}

// ChatDelta is vLLM's DeltaMessage: the role in a choice's first chunk,
// then content, reasoning or tool calls as they come.
type ChatDelta struct {
	Role      string              `json:"role,omitempty"`
	Content   *string             `json:"content,omitempty"`
	Reasoning *string             `json:"reasoning,omitempty"`
	ToolCalls []ChatToolCallDelta `json:"tool_calls,omitempty"`
}

// ChatToolCallDelta is vLLM's DeltaToolCall; tandem sends each tool call
// whole, in one delta.
type ChatToolCallDelta struct {
	Index int `json:"index"`
	ChatToolCall
}

// ChatStreamChoice is vLLM's ChatCompletionResponseStreamChoice.
type ChatStreamChoice struct {
	Index        int           `json:"index"`
	Delta        ChatDelta     `json:"delta"`
	Logprobs     *ChatLogProbs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
	StopReason   any           `json:"stop_reason"`
	TokenIDs     []int         `json:"token_ids,omitempty"`
}

// ChatStreamResponse is vLLM's ChatCompletionStreamResponse
// ("chat.completion.chunk").
type ChatStreamResponse struct {
	ID             string             `json:"id"`
	Object         string             `json:"object"`
	Created        int64              `json:"created"`
	Model          string             `json:"model"`
	Choices        []ChatStreamChoice `json:"choices"`
	Usage          *Usage             `json:"usage"`
	PromptTokenIDs []int              `json:"prompt_token_ids,omitempty"`
}

// textDeltas cuts text, the visible text of a sequence of tokens, into
// one piece per token as a streaming detokenizer would hand it out: piece
// i is what the tokens up to i decode to beyond the pieces before it, as
// far as that agrees with text (a stop string cut away, or bytes of a
// character still incomplete, wait), and the last piece takes the rest.
// The pieces always join to text.
func textDeltas(tok *tokenizer.Tokenizer, skipSpecial bool, toks []int, text string) ([]string, error) {
	out := make([]string, len(toks))
	if len(toks) == 0 {
		return out, nil
	}
	d := tok.NewStreamDecoder(skipSpecial)
	var decoded strings.Builder
	sent := 0
	for i, id := range toks {
		piece, err := d.Next(id)
		if err != nil {
			return nil, badRequest("", "decoding the completion: %v", err)
		}
		decoded.WriteString(piece)
		if i == len(toks)-1 {
			out[i] = text[sent:]
			break
		}
		// The pieces so far agree with text up to sent: compare the rest
		// only, so a long completion costs linear time.
		agree := sent + commonPrefix(decoded.String()[sent:], text[sent:])
		if agree > sent {
			out[i] = text[sent:agree]
			sent = agree
		}
	}
	return out, nil
}

// commonPrefix is the length of the longest common prefix of a and b that
// ends on a character boundary of b.
func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	for n > 0 && n < len(b) && !isCharStart(b[n]) {
		n--
	}
	return n
}

func isCharStart(c byte) bool { return c&0xC0 != 0x80 }

// writeStream answers a streamed request: each chunk as a server-sent
// event "data: <json>", then "data: [DONE]", flushed event by event, as
// vLLM's StreamingResponse does. A client that goes away ends it.
func writeStream(w http.ResponseWriter, chunks []any) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(data []byte) bool {
		if _, err := w.Write([]byte("data: ")); err != nil {
			return false
		}
		if _, err := w.Write(data); err != nil {
			return false
		}
		if _, err := w.Write([]byte("\n\n")); err != nil {
			return false
		}
		rc.Flush()
		return true
	}
	for _, c := range chunks {
		b, err := json.Marshal(c)
		if err != nil {
			b, _ = json.Marshal(ErrorResponse{Error: ErrorInfo{Message: err.Error(), Type: typeInternal, Code: http.StatusInternalServerError}})
		}
		if !send(b) {
			return
		}
	}
	send([]byte("[DONE]"))
}

// streamPart is what a choice's chunks are cut from: its tokens, the text
// each one adds, and the prompt it continues.
type streamPart struct {
	tokens []int
	pieces []string
	prompt []int
}

// completionChunks cuts a finished completion into vLLM's stream: for
// each token position, one chunk per choice that has a token there (so
// the n choices interleave, as they do when decoded together), each with
// the token's text, log-probs and id. A choice's first chunk also carries
// the echoed prompt (text and log-probs) and, with return_token_ids, the
// prompt's ids; its last chunk carries finish_reason and stop_reason. A
// choice with no tokens (echo alone) is one chunk. Then, with
// include_usage, one chunk with no choices and the usage.
func completionChunks(resp CompletionResponse, parts []streamPart, g gen) []any {
	var chunks []any
	usage := Usage{PromptTokens: resp.Usage.PromptTokens}
	emit := func(c CompletionStreamChoice) {
		ch := CompletionStreamResponse{ID: resp.ID, Object: resp.Object, Created: resp.Created, Model: resp.Model, Choices: []CompletionStreamChoice{c}}
		if g.stream.everyChunk {
			u := usage
			u.TotalTokens = u.PromptTokens + u.CompletionTokens
			ch.Usage = &u
		}
		chunks = append(chunks, ch)
	}
	eachChunk(parts, func(t, c int, last bool) {
		p, full := parts[c], resp.Choices[c]
		sc := CompletionStreamChoice{Index: full.Index}
		echoed := 0 // log-prob entries of the echoed prompt
		if full.Logprobs != nil {
			echoed = len(full.Logprobs.Tokens) - len(p.tokens)
		}
		lo, hi := echoed+t, echoed+t+1
		if t == 0 {
			sc.Text = full.Text[:full.echoLen]
			lo = 0
			if g.tokenIDs {
				sc.PromptTokenIDs = p.prompt
			}
		}
		if len(p.tokens) > 0 {
			sc.Text += p.pieces[t]
			usage.CompletionTokens++
			if g.tokenIDs {
				sc.TokenIDs = []int{p.tokens[t]}
			}
		} else {
			hi = echoed
		}
		if full.Logprobs != nil {
			sc.Logprobs = sliceLogprobs(full.Logprobs, lo, hi)
		}
		if last {
			reason := full.FinishReason
			sc.FinishReason, sc.StopReason = &reason, full.StopReason
		}
		emit(sc)
	})
	if g.stream.usage {
		u := resp.Usage
		chunks = append(chunks, CompletionStreamResponse{ID: resp.ID, Object: resp.Object, Created: resp.Created, Model: resp.Model, Choices: []CompletionStreamChoice{}, Usage: &u})
	}
	return chunks
}

// sliceLogprobs is entries [lo, hi) of a completion's log-probs.
func sliceLogprobs(lp *CompletionLogProbs, lo, hi int) *CompletionLogProbs {
	return &CompletionLogProbs{
		TextOffset:    lp.TextOffset[lo:hi],
		TokenLogprobs: lp.TokenLogprobs[lo:hi],
		Tokens:        lp.Tokens[lo:hi],
		TopLogprobs:   lp.TopLogprobs[lo:hi],
	}
}

// chatChunks cuts a finished chat completion into vLLM's stream: first a
// chunk per choice with the role and empty content, then for each token
// position one chunk per choice that has a token there, with the content
// the token adds (its log-probs and id alongside); the parsed reasoning
// goes whole into the choice's first token chunk and its tool calls whole
// into its last, which also carries finish_reason. Then, with
// include_usage, one chunk with no choices and the usage. With
// return_token_ids the first chunk carries the prompt's ids.
func chatChunks(resp ChatResponse, parts []streamPart, g gen) []any {
	var chunks []any
	usage := Usage{PromptTokens: resp.Usage.PromptTokens}
	emit := func(c ChatStreamChoice, first bool) {
		ch := ChatStreamResponse{ID: resp.ID, Object: "chat.completion.chunk", Created: resp.Created, Model: resp.Model, Choices: []ChatStreamChoice{c}}
		if first {
			ch.PromptTokenIDs = resp.PromptTokenIDs
		}
		if g.stream.everyChunk {
			u := usage
			u.TotalTokens = u.PromptTokens + u.CompletionTokens
			ch.Usage = &u
		}
		chunks = append(chunks, ch)
	}
	for c := range parts {
		empty := ""
		emit(ChatStreamChoice{Index: resp.Choices[c].Index, Delta: ChatDelta{Role: resp.Choices[c].Message.Role, Content: &empty}}, c == 0)
	}
	eachChunk(parts, func(t, c int, last bool) {
		p, full := parts[c], resp.Choices[c]
		sc := ChatStreamChoice{Index: full.Index}
		if len(p.tokens) > 0 {
			piece := p.pieces[t]
			sc.Delta.Content = &piece
			usage.CompletionTokens++
			if g.tokenIDs {
				sc.TokenIDs = []int{p.tokens[t]}
			}
			if full.Logprobs != nil {
				sc.Logprobs = &ChatLogProbs{Content: full.Logprobs.Content[t : t+1]}
			}
		}
		if t == 0 {
			sc.Delta.Reasoning = full.Message.Reasoning
		}
		if last {
			for i, tc := range full.Message.ToolCalls {
				sc.Delta.ToolCalls = append(sc.Delta.ToolCalls, ChatToolCallDelta{Index: i, ChatToolCall: tc})
			}
			reason := full.FinishReason
			sc.FinishReason, sc.StopReason = &reason, full.StopReason
		}
		emit(sc, false)
	})
	if g.stream.usage {
		u := resp.Usage
		chunks = append(chunks, ChatStreamResponse{ID: resp.ID, Object: "chat.completion.chunk", Created: resp.Created, Model: resp.Model, Choices: []ChatStreamChoice{}, Usage: &u})
	}
	return chunks
}

// eachChunk calls f for each chunk of a stream in order: token position t
// of choice c, for every t and every choice that has a token there (a
// choice with none has one chunk, at t = 0); last marks a choice's last.
func eachChunk(parts []streamPart, f func(t, c int, last bool)) {
	longest := 1
	for _, p := range parts {
		longest = max(longest, len(p.tokens))
	}
	for t := range longest {
		for c, p := range parts {
			if end := max(len(p.tokens), 1) - 1; t <= end {
				f(t, c, t == end)
			}
		}
	}
}
