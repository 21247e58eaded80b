package openai

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecoders: no body makes a request decoder panic, and every refusal
// is an *APIError with a 4xx status.
func FuzzDecoders(f *testing.F) {
	for _, name := range []string{"completion_request.json", "chat_request.json", "load_lora_request.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{`{"prompt":[[1,2],[3]]}`, `{"prompt":["a","b"],"stop":"x"}`, `{"prompt":[1],"n":-1}`, `[]`, `null`, `{"messages":[{"role":"user","content":null}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		check := func(err error) {
			if err == nil {
				return
			}
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status < 400 || ae.Status > 499 {
				t.Fatalf("decoder error %v is not a 4xx APIError", err)
			}
		}
		_, err := decodeCompletion(body)
		check(err)
		_, err = decodeChat(body)
		check(err)
		var lr LoadLoRARequest
		check(decode(body, &lr))
		var tr TokenizeRequest
		check(decode(body, &tr))
	})
}
