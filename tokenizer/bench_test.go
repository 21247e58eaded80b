package tokenizer

import (
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchText is English prose from the Go tree (Newton's Opticks, read at
// run time), in 4 KB chunks cut at line ends.
func benchText(b *testing.B) []string {
	for _, dir := range []string{"src/testdata", "src/compress/testdata"} {
		data, err := os.ReadFile(filepath.Join(build.Default.GOROOT, dir, "Isaac.Newton-Opticks.txt"))
		if err != nil {
			continue
		}
		text := strings.ToValidUTF8(string(data), "")
		var chunks []string
		for len(text) > 0 {
			n := min(len(text), 4096)
			if i := strings.LastIndexByte(text[:n], '\n'); i > 0 && n < len(text) {
				n = i + 1
			}
			chunks = append(chunks, text[:n])
			text = text[n:]
		}
		return chunks
	}
	b.Skip("no Isaac.Newton-Opticks.txt in GOROOT")
	return nil
}

// benchTokenizers are the real tokenizers that are installed, and the
// synthetic byte-level one.
func benchTokenizers(b *testing.B) map[string]*Tokenizer {
	toks := map[string]*Tokenizer{"synthetic": mustParse(b, byteLevelJSON(b))}
	for _, name := range []string{"qwen3", "llama3_1", "deepseek_v3", "gemma3"} {
		if tok, _ := loadReal(name); tok != nil {
			toks[name] = tok
		}
	}
	return toks
}

// BenchmarkEncode reports tokens/s on one goroutine, warm (every word of
// the text already in the cache) and cold (an empty cache each pass).
func BenchmarkEncode(b *testing.B) {
	chunks := benchText(b)
	for name, tok := range benchTokenizers(b) {
		var dst []int
		tokens := 0
		for _, c := range chunks {
			dst = tok.AppendEncode(dst[:0], c, EncodeOptions{})
			tokens += len(dst)
		}
		b.Run(name+"/warm", func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(strings.Join(chunks, ""))))
			for b.Loop() {
				for _, c := range chunks {
					dst = tok.AppendEncode(dst[:0], c, EncodeOptions{})
				}
			}
			b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(0, "ns/op")
		})
		b.Run(name+"/cold", func(b *testing.B) {
			b.ReportAllocs()
			m, isBPE := tok.model.(*bpe)
			for b.Loop() {
				if isBPE {
					b.StopTimer()
					m.cache = newWordCache()
					b.StartTimer()
				}
				for _, c := range chunks {
					dst = tok.AppendEncode(dst[:0], c, EncodeOptions{})
				}
			}
			b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkEncodeLongWords reports tokens/s and allocations on the warm
// path for Gemma 3–shaped text, whose words (the lines between "\n"
// tokens) are mostly too long for the word cache: the real Gemma 3 on the
// English text when installed, and the synthetic gemma-like tokenizer.
func BenchmarkEncodeLongWords(b *testing.B) {
	type longCase struct {
		tok    *Tokenizer
		chunks []string
	}
	cases := map[string]longCase{
		"gemma-like": {mustParse(b, gemmaLikeJSON(b)), []string{gemmaLikeText(1, 4096), gemmaLikeText(2, 4096)}},
	}
	if tok, _ := loadReal("gemma3"); tok != nil {
		cases["gemma3"] = longCase{tok, benchText(b)}
	}
	for name, c := range cases {
		var dst []int
		tokens := 0
		for _, text := range c.chunks {
			dst = c.tok.AppendEncode(dst[:0], text, EncodeOptions{})
			tokens += len(dst)
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, text := range c.chunks {
					dst = c.tok.AppendEncode(dst[:0], text, EncodeOptions{})
				}
			}
			b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(len(c.chunks)), "chunks/op")
		})
	}
}

// BenchmarkDecode reports tokens/s decoding the text's ids in 4 KB chunks.
func BenchmarkDecode(b *testing.B) {
	chunks := benchText(b)
	for name, tok := range benchTokenizers(b) {
		var ids [][]int
		tokens := 0
		for _, c := range chunks {
			ids = append(ids, tok.Encode(c, EncodeOptions{}))
			tokens += len(ids[len(ids)-1])
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, x := range ids {
					if _, err := tok.Decode(x, false); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkLoad reads each installed real tokenizer.json.
func BenchmarkLoad(b *testing.B) {
	for _, name := range []string{"qwen3", "llama3_1", "deepseek_v3", "gemma3"} {
		data, err := os.ReadFile(filepath.Join(hfDir(), "models", name, "tokenizer.json"))
		if err != nil {
			continue
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Parse(data, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
