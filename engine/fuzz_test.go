package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParseBase feeds arbitrary bytes to the base-model reader: it must
// return a model or an error, never panic, and a model it returns must have
// the shapes of its config.
func FuzzParseBase(f *testing.F) {
	cfg := Config{Vocab: 5, Dim: 4, Layers: 1, Heads: 2, Hidden: 3, Context: 4}
	m, err := NewModel[float32](cfg, 1)
	if err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(f.TempDir(), "m.safetensors")
	if err := SaveBase(path, m, "F16"); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseBase[float32](data)
		if err != nil {
			return
		}
		if m.NumParams() != m.Config.Params() {
			t.Fatalf("model has %d params, config says %d", m.NumParams(), m.Config.Params())
		}
	})
}

// FuzzAdapterConfig feeds arbitrary adapter_config.json contents to the PEFT
// reader.
func FuzzAdapterConfig(f *testing.F) {
	good, _ := json.Marshal(peftConfig{PeftType: "LORA", R: 8, LoraAlpha: 32, TargetModules: []string{"q_proj", "k_proj", "v_proj", "o_proj", "lm_head"}})
	f.Add(good)
	f.Add([]byte(`{"peft_type":"LORA","r":0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var pc peftConfig
		if json.Unmarshal(data, &pc) != nil {
			return
		}
		l, err := pc.lora()
		if err != nil {
			return
		}
		if err := l.Validate(); err != nil {
			t.Fatalf("accepted an invalid config %+v: %v", l, err)
		}
	})
}

// FuzzTokenizer: Encode accepts exactly printable ASCII and newline, and
// Decode inverts it.
func FuzzTokenizer(f *testing.F) {
	f.Add("What is 12 + 35? 47\n")
	f.Add("naïve\x00")
	f.Fuzz(func(t *testing.T, s string) {
		var tok Tokenizer
		ids, err := tok.Encode(s)
		if err != nil {
			return
		}
		if got := tok.Decode(ids); got != s {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
		for _, id := range ids {
			if id < Newline || id >= VocabSize {
				t.Fatalf("id %d out of range", id)
			}
		}
	})
}
