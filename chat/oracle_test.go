package chat_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tandemrl/tandem/chat"
	"github.com/tandemrl/tandem/internal/hforacle"
	"github.com/tandemrl/tandem/tokenizer"
)

// The differential tests need outside tools: python3 with jinja2 (the
// template oracle) and node with the files .ci/hf-oracle installs (the
// tokenizer oracle). Without them a test skips, except under CI=true, where
// it fails.

// models are the four model folders .ci/hf-oracle installs.
var models = []string{"qwen3", "llama3_1", "deepseek_v3", "gemma3"}

// loadConfig reads the tokenizer_config.json fields chat uses.
func loadConfig(t testing.TB, model string) tokenizer.Config {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(hforacle.Model(t, model), "tokenizer_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	tokenText := func(k string) string {
		var s string
		if json.Unmarshal(raw[k], &s) == nil {
			return s
		}
		var obj struct{ Content string }
		_ = json.Unmarshal(raw[k], &obj)
		return obj.Content
	}
	var cfg tokenizer.Config
	cfg.BOSToken, cfg.EOSToken = tokenText("bos_token"), tokenText("eos_token")
	cfg.PadToken, cfg.UnkToken = tokenText("pad_token"), tokenText("unk_token")
	if err := json.Unmarshal(raw["chat_template"], &cfg.ChatTemplate); err != nil {
		t.Fatalf("%s: chat_template: %v", model, err)
	}
	return cfg
}

var (
	oracleMu sync.Mutex
	oracles  = map[string]*hforacle.Process{} // stopped by TestMain
)

func cachedPipe(t testing.TB, key string, start func() (*hforacle.Process, error)) *hforacle.Process {
	t.Helper()
	oracleMu.Lock()
	defer oracleMu.Unlock()
	if p, ok := oracles[key]; ok {
		return p
	}
	p, err := start()
	if err != nil {
		t.Fatalf("start %s: %v", key, err)
	}
	oracles[key] = p
	return p
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, p := range oracles {
		_ = p.Close()
	}
	os.Exit(code)
}

var (
	goToksMu sync.Mutex
	goToks   = map[string]*tokenizer.Tokenizer{}
)

// goTokenizer is tandem's tokenizer for a model.
func goTokenizer(t testing.TB, model string) *tokenizer.Tokenizer {
	t.Helper()
	dir := hforacle.Model(t, model)
	goToksMu.Lock()
	defer goToksMu.Unlock()
	if tok, ok := goToks[model]; ok {
		return tok
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatalf("load %s: %v", model, err)
	}
	goToks[model] = tok
	return tok
}

// tokImpl is one tokenizer implementation for a model.
type tokImpl struct {
	name string // "go" or "hf"
	tok  chat.Tokenizer
	cfg  tokenizer.Config
}

// tokenizersFor is tandem's tokenizer for the model and, when node and the
// npm package are installed (always under CI=true), Hugging Face's.
func tokenizersFor(t testing.TB, model string) []tokImpl {
	t.Helper()
	g := goTokenizer(t, model)
	impls := []tokImpl{{name: "go", tok: g, cfg: g.Config()}}
	if hfAvailable() || os.Getenv("CI") == "true" {
		impls = append(impls, tokImpl{name: "hf", tok: newHFTokenizer(t, model), cfg: loadConfig(t, model)})
	}
	return impls
}

func hfAvailable() bool { return hforacle.NodeReady(hforacle.Dir()) == nil }

// hfTokenizer is Hugging Face's tokenizer for a model (testdata/
// hf_tokenizer.js under node), as a chat.Tokenizer.
type hfTokenizer struct {
	p    *hforacle.Process
	mu   sync.Mutex
	memo map[encodeKey][]int
}

type encodeKey struct {
	text string
	opt  tokenizer.EncodeOptions
}

func newHFTokenizer(t testing.TB, model string) *hfTokenizer {
	t.Helper()
	dir := hforacle.Model(t, model)
	hfDir := hforacle.Node(t)
	p := cachedPipe(t, "node:"+model, func() (*hforacle.Process, error) {
		return hforacle.StartNode(filepath.Join("testdata", "hf_tokenizer.js"), hfDir, dir)
	})
	return &hfTokenizer{p: p, memo: map[encodeKey][]int{}}
}

type tokAnswer struct {
	IDs   []int  `json:"ids"`
	Text  string `json:"text"`
	ID    *int   `json:"id"`
	Error string `json:"error"`
}

func (h *hfTokenizer) ask(req map[string]any) tokAnswer {
	var a tokAnswer
	if err := h.p.Call(req, &a); err != nil {
		panic(fmt.Sprintf("hf tokenizer: %v", err))
	}
	return a
}

// Encode asks node once per distinct request (renderers encode the same
// headers over and over).
func (h *hfTokenizer) Encode(text string, opt tokenizer.EncodeOptions) []int {
	key := encodeKey{text, opt}
	h.mu.Lock()
	ids, ok := h.memo[key]
	h.mu.Unlock()
	if !ok {
		a := h.ask(map[string]any{"op": "encode", "text": text, "add": opt.AddSpecialTokens, "split": opt.SplitSpecialTokens})
		if a.Error != "" {
			panic("hf tokenizer: encode: " + a.Error)
		}
		ids = a.IDs
		h.mu.Lock()
		h.memo[key] = ids
		h.mu.Unlock()
	}
	return append([]int{}, ids...)
}

func (h *hfTokenizer) Decode(ids []int, skip bool) (string, error) {
	a := h.ask(map[string]any{"op": "decode", "ids": ids, "skip": skip})
	if a.Error != "" {
		return "", fmt.Errorf("hf tokenizer: %s", a.Error)
	}
	return a.Text, nil
}

func (h *hfTokenizer) TokenID(token string) (int, bool) {
	a := h.ask(map[string]any{"op": "id", "token": token})
	if a.ID == nil {
		return 0, false
	}
	return *a.ID, true
}

// jinja2 is testdata/hf_render.py: Python's Jinja2 set up as transformers
// sets it up.
type jinja2 struct{ p *hforacle.Process }

func newJinja2(t testing.TB) *jinja2 {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		hforacle.Need(t, "python3 is not installed")
	}
	if out, err := exec.Command("python3", "-c", "import jinja2").CombinedOutput(); err != nil {
		hforacle.Need(t, "python3 has no jinja2: %s", strings.TrimSpace(string(out)))
	}
	p := cachedPipe(t, "python", func() (*hforacle.Process, error) {
		return hforacle.Start(nil, "python3", filepath.Join("testdata", "hf_render.py"))
	})
	return &jinja2{p: p}
}

// renderRequest is one hf_render.py request.
type renderRequest struct {
	Config               string          `json:"config,omitempty"`
	Template             string          `json:"template,omitempty"`
	Messages             json.RawMessage `json:"messages"`
	Tools                json.RawMessage `json:"tools,omitempty"`
	AddGenerationPrompt  bool            `json:"add_generation_prompt"`
	ContinueFinalMessage bool            `json:"continue_final_message,omitempty"`
	Kwargs               map[string]any  `json:"kwargs,omitempty"`
	Now                  string          `json:"now"`
}

type renderAnswer struct {
	Text          *string `json:"text"`
	Error         string  `json:"error"`
	TemplateError bool    `json:"template_error"`
}

func (j *jinja2) render(t testing.TB, req renderRequest) renderAnswer {
	t.Helper()
	var a renderAnswer
	if err := j.p.Call(req, &a); err != nil {
		t.Fatalf("jinja2: %v", err)
	}
	return a
}
