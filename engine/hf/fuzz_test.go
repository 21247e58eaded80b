package hf

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseConfig: any input either errors with a *ConfigError naming the
// file or yields a config the engine accepts, within the context cap.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{smolLM2Config, qwen25Config, qwen3Config, llama32Config, mistralConfig, qwen3V5Config, `{}`, `null`, `{"model_type":"llama"}`} {
		f.Add([]byte(s), 4096)
	}
	for _, name := range goldenCases {
		if b, err := os.ReadFile(filepath.Join("testdata", name, ConfigFile)); err == nil {
			f.Add(b, 0)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 1 || max > 1<<16 {
			max = DefaultMaxContext
		}
		mc, err := parseConfig("x/config.json", data, max)
		if err != nil {
			var ce *ConfigError
			if !errorsAs(err, &ce) || !strings.Contains(err.Error(), "x/config.json") {
				t.Fatalf("error %v is not a *ConfigError naming the file", err)
			}
			return
		}
		if err := mc.cfg.Validate(); err != nil {
			t.Fatalf("accepted an invalid config: %v", err)
		}
		if mc.cfg.Context > max || mc.cfg.Context > mc.maxPos {
			t.Fatalf("context %d exceeds the cap %d or max_position_embeddings %d", mc.cfg.Context, max, mc.maxPos)
		}
		if mc.slidingWindow != 0 && mc.slidingWindow < mc.cfg.Context {
			t.Fatalf("window %d shorter than context %d", mc.slidingWindow, mc.cfg.Context)
		}
		if mc.cfg.Params() < 0 {
			t.Fatal("negative parameter count")
		}
	})
}

// FuzzParseIndex: any input errors with a *ConfigError or gives a
// non-empty map of plain .safetensors file names.
func FuzzParseIndex(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("testdata", "qwen3-bf16-sharded", IndexFile)); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"metadata":{"total_size":8},"weight_map":{"a":"model-1.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":"../b.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := parseIndex("x/index.json", data)
		if err != nil {
			var ce *ConfigError
			if !errorsAs(err, &ce) {
				t.Fatalf("error %v is not a *ConfigError", err)
			}
			return
		}
		if len(m) == 0 {
			t.Fatal("empty map accepted")
		}
		for name, file := range m {
			if name == "" || file != filepath.Base(file) || strings.ContainsAny(file, `/\`) || !strings.HasSuffix(file, ".safetensors") {
				t.Fatalf("accepted %q → %q", name, file)
			}
		}
	})
}
