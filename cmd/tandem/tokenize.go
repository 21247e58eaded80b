package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/tokenizer"
)

const tokenizeUsage = `tandem tokenize --tokenizer DIR

Reads JSON lines on stdin and writes one JSON line per input line, in order,
with the tokenizer of DIR (its tokenizer.json and, if present,
tokenizer_config.json, as in a Hugging Face model folder):

  {"text": "...", "add_special_tokens": false}      -> {"ids": [...]}
      encode, as Hugging Face's tokenizer.encode (add_special_tokens
      defaults to true, as there)
  {"ids": [1,2,3], "skip_special_tokens": false}     -> {"text": "..."}
      decode, as tokenizer.decode (skip_special_tokens defaults to false)
  {"messages": [{"role": "user", "content": "..."}], "add_generation_prompt": true,
   "tools": [...], "chat_template_kwargs": {"enable_thinking": false}}  -> {"ids": [...]}
      render with the model's chat template and encode without special
      tokens, as transformers' apply_chat_template(tokenize=True)

A line that is not one of these gets {"error": "..."} and the next line is
read. Flags:
`

func runTokenize(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return tokenize(ctx, args, os.Stdin, stdout, stderr)
}

func tokenize(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlags("tokenize", stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), tokenizeUsage)
		fs.PrintDefaults()
	}
	dir := fs.String("tokenizer", "", "folder with tokenizer.json (and tokenizer_config.json)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		return usagef("tokenize: -tokenizer DIR is required (a folder with tokenizer.json)")
	}
	tok, err := tokenizer.Load(*dir)
	if err != nil {
		return err
	}
	srv := &tokenizeServer{tok: tok}
	if srv.tmpl, err = chat.NewTemplate(tok.Config()); err != nil {
		srv.tmpl, srv.noTemplate = nil, fmt.Errorf("no chat template: %w", err)
	}
	in := bufio.NewReaderSize(stdin, 1<<16)
	out := bufio.NewWriter(stdout)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, readErr := in.ReadBytes('\n')
		if len(line) > 0 || readErr == nil {
			reply := srv.line(bytes.TrimRight(line, "\r\n"))
			if _, err := out.Write(append(reply, '\n')); err != nil {
				return fmt.Errorf("tokenize: write: %w", err)
			}
			// Reply before reading on: the other side may wait for
			// each answer before it writes the next line.
			if in.Buffered() == 0 {
				if err := out.Flush(); err != nil {
					return fmt.Errorf("tokenize: write: %w", err)
				}
			}
		}
		if readErr != nil {
			if flushErr := out.Flush(); flushErr != nil {
				return fmt.Errorf("tokenize: write: %w", flushErr)
			}
			if errors.Is(readErr, io.EOF) {
				return nil
			}
			return fmt.Errorf("tokenize: read stdin: %w", readErr)
		}
	}
}

// tokenizeRequest is an encode or decode line. Which of text and ids is
// present says what to do; each option belongs to one of them. A line with
// "messages" is a chat (chat.DecodeTemplateRequest reads it).
type tokenizeRequest struct {
	Text              *string `json:"text"`
	AddSpecialTokens  *bool   `json:"add_special_tokens"`
	IDs               *[]int  `json:"ids"`
	SkipSpecialTokens *bool   `json:"skip_special_tokens"`
}

// tokenizeServer is what tokenize serves lines with: the tokenizer, and its chat
// template compiled once (nil, with why, when the folder has none).
type tokenizeServer struct {
	tok        *tokenizer.Tokenizer
	tmpl       *chat.Template
	noTemplate error
}

type tokenizeReply struct {
	IDs   *[]int  `json:"ids,omitempty"`
	Text  *string `json:"text,omitempty"`
	Error string  `json:"error,omitempty"`
}

// line answers one line; every failure is an error reply.
func (srv *tokenizeServer) line(line []byte) []byte {
	rep, err := srv.answer(line)
	if err != nil {
		rep = tokenizeReply{Error: err.Error()}
	}
	b, err := json.Marshal(rep)
	if err != nil { // cannot happen: the reply holds ints and strings
		b, _ = json.Marshal(tokenizeReply{Error: "encode reply: " + err.Error()})
	}
	return b
}

const expected = `expected a JSON object with "text", "ids" or "messages"`

func (srv *tokenizeServer) answer(line []byte) (tokenizeReply, error) {
	if len(bytes.TrimSpace(line)) == 0 {
		return tokenizeReply{}, errors.New("empty line; " + expected)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(line, &fields); err != nil {
		return tokenizeReply{}, fmt.Errorf("bad line: %w; %s", err, expected)
	}
	if _, ok := fields["messages"]; ok {
		for _, k := range []string{"text", "ids"} {
			if _, both := fields[k]; both {
				return tokenizeReply{}, fmt.Errorf(`bad line: "messages" and %q together; want one of "text", "ids" and "messages"`, k)
			}
		}
		if srv.tmpl == nil {
			return tokenizeReply{}, srv.noTemplate
		}
		req, err := chat.DecodeTemplateRequest(line)
		if err != nil {
			return tokenizeReply{}, err
		}
		ids, err := srv.tmpl.Encode(srv.tok, req.Messages, req.Options)
		if err != nil {
			return tokenizeReply{}, err
		}
		return tokenizeReply{IDs: nonNil(ids)}, nil
	}
	var req tokenizeRequest
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return tokenizeReply{}, fmt.Errorf("bad line: %w; %s", err, expected)
	}
	switch {
	case req.Text != nil && req.IDs != nil:
		return tokenizeReply{}, errors.New(`bad line: "text" and "ids" together; want one of "text", "ids" and "messages"`)
	case req.Text != nil:
		if req.SkipSpecialTokens != nil {
			return tokenizeReply{}, errors.New(`bad line: "skip_special_tokens" goes with "ids", not "text"`)
		}
		add := req.AddSpecialTokens == nil || *req.AddSpecialTokens
		ids := srv.tok.Encode(*req.Text, tokenizer.EncodeOptions{AddSpecialTokens: add})
		return tokenizeReply{IDs: nonNil(ids)}, nil
	case req.IDs != nil:
		if req.AddSpecialTokens != nil {
			return tokenizeReply{}, errors.New(`bad line: "add_special_tokens" goes with "text", not "ids"`)
		}
		text, err := srv.tok.Decode(*req.IDs, req.SkipSpecialTokens != nil && *req.SkipSpecialTokens)
		if err != nil {
			return tokenizeReply{}, err
		}
		return tokenizeReply{Text: &text}, nil
	}
	return tokenizeReply{}, errors.New("bad line: " + expected)
}

func nonNil(ids []int) *[]int {
	if ids == nil {
		ids = []int{}
	}
	return &ids
}
