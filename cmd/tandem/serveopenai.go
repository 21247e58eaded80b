package main

import (
	"fmt"
	"io"
	"net/http"

	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/server/localbackend"
	"github.com/tandemrl/tandem/server/openai"
)

// openAIPaths are where serve mounts the OpenAI-compatible surface (package
// server/openai), next to the Tinker API under /api/v1/.
var openAIPaths = []string{"/v1/", "/tokenize", "/detokenize"}

// openAISurface is the OpenAI-compatible, vLLM-flavoured surface over the
// served base model: the -model folder's tokenizer and chat template (or
// role_colon), or the shipped model's tokenizer and role_colon. Adapters
// load from PEFT folders this process can read.
// A -model folder without tokenizer.json gets no surface (nil), with a
// line on stderr saying so.
func openAISurface(f serveFlags, be *localbackend.Backend, base *engine.Model[float32], md *modelDir, stderr io.Writer) (http.Handler, error) {
	m := openai.Model{Name: f.baseName, MaxModelLen: base.Config.Context, VocabSize: base.Config.Vocab, Renderer: "role_colon"}
	switch {
	case md != nil:
		if md.tok == nil {
			fmt.Fprintf(stderr, "tandem serve: no OpenAI-compatible surface (/v1/): %s has no tokenizer.json\n", md.dir)
			return nil, nil
		}
		m.Tokenizer, m.Root, m.Renderer = md.tok, md.dir, chat.DefaultName(md.tok.Config())
	default:
		tok, err := basemodel.Tokenizer()
		if err != nil {
			return nil, fmt.Errorf("OpenAI surface: %w", err)
		}
		m.Tokenizer = tok
		if f.base != "" {
			m.Root = f.base
		}
	}
	return openai.New(openai.Options{
		Models:      []openai.Model{m},
		NewSampler:  be.NewSampler,
		CheckKey:    openai.KeyChecker(f.apiKey),
		MaxInFlight: f.maxInFlight,
	})
}
