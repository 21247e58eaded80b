package splitfast

import (
	"go/build"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchTexts returns the benchmark inputs: Newton's Opticks from the Go
// source tree (English prose, read at run time, skipped if absent) and 1 MB
// of seeded mixed-script text from the test pools.
func benchTexts(b *testing.B) []struct{ name, text string } {
	var out []struct{ name, text string }
	for _, dir := range []string{"src/testdata", "src/compress/testdata"} {
		path := filepath.Join(build.Default.GOROOT, dir, "Isaac.Newton-Opticks.txt")
		if data, err := os.ReadFile(path); err == nil {
			out = append(out, struct{ name, text string }{"opticks", string(data)})
			break
		}
	}
	rng := rand.New(rand.NewPCG(7, 7))
	var sb strings.Builder
	for sb.Len() < 1<<20 {
		sb.WriteString(randomString(rng, false))
		sb.WriteByte(' ')
	}
	out = append(out, struct{ name, text string }{"mixed", sb.String()})
	return out
}

func BenchmarkSplit(b *testing.B) {
	for _, tc := range benchTexts(b) {
		for _, k := range knownPatterns {
			b.Run(tc.name+"/"+k.name+"/splitfast", func(b *testing.B) {
				dst := k.match(nil, tc.text)
				b.SetBytes(int64(len(tc.text)))
				b.ReportAllocs()
				for b.Loop() {
					dst = k.match(dst[:0], tc.text)
				}
			})
			b.Run(tc.name+"/"+k.name+"/regexp2", func(b *testing.B) {
				b.SetBytes(int64(len(tc.text)))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := k.exact.FindAllStringIndex(tc.text, -1); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
