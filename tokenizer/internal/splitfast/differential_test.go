package splitfast

import (
	"flag"
	"math/rand/v2"
	"sync"
	"testing"
)

var randomCount = flag.Int("splitfast.random", 0,
	"random strings per pattern in TestRandomDifferential (0: 100,000, or 10,000 under -race or -short)")

// TestRandomDifferential compares each Matcher with regexp2 on seeded
// random strings from the pools. The race detector slows regexp2 down
// tenfold; -race runs a tenth of the strings unless -splitfast.random says
// otherwise.
func TestRandomDifferential(t *testing.T) {
	t.Parallel()
	n := *randomCount
	if n == 0 {
		n = 100_000
		if raceEnabled || testing.Short() {
			n = 10_000
		}
	}
	for pi, k := range knownPatterns {
		t.Run(k.name, func(t *testing.T) {
			t.Parallel()
			const workers = 4
			var wg sync.WaitGroup
			var mu sync.Mutex
			var compared, with16, failed int
			for w := range workers {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(pi), uint64(w)))
					c, x, f := 0, 0, 0
					for i := w; i < n; i += workers {
						s := randomString(rng, true)
						if hasUnicode16(s) {
							x++
						}
						if !compare(t, k, s) {
							f++
						}
						c++
						if f >= 10 {
							break
						}
					}
					mu.Lock()
					compared, with16, failed = compared+c, with16+x, failed+f
					mu.Unlock()
				})
			}
			wg.Wait()
			t.Logf("%d strings compared (%d with Unicode 15.1/16.0 letters or numbers, against the patched reference only), %d differ",
				compared, with16, failed)
		})
	}
}

// FuzzMatchesRegexp2 compares the Matchers with regexp2 on any input.
func FuzzMatchesRegexp2(f *testing.F) {
	for _, s := range targeted {
		f.Add(s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 64 {
		f.Add(randomString(rng, true))
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, k := range knownPatterns {
			compare(t, k, s)
		}
	})
}
