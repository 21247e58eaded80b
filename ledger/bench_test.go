package ledger

import (
	"strconv"
	"testing"
)

// BenchmarkTakenTrained records what a run does for each group of a new
// prompt: a hand-out, then a training. Prompts are as many as a
// bench/pipeline overhead run hands out (2,000 steps of 64 groups).
func BenchmarkTakenTrained(b *testing.B) {
	keys := make([]string, 2000*64)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	b.ReportAllocs()
	var l *Ledger
	for i := 0; b.Loop(); i++ {
		if i%len(keys) == 0 {
			l = &Ledger{}
		}
		k := keys[i%len(keys)]
		l.Taken(k)
		l.Trained(k, Training{Step: i})
	}
}

// BenchmarkTakenTrainedReserved is BenchmarkTakenTrained with the
// ledger's room reserved up front.
func BenchmarkTakenTrainedReserved(b *testing.B) {
	keys := make([]string, 2000*64)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	b.ReportAllocs()
	var l *Ledger
	for i := 0; b.Loop(); i++ {
		if i%len(keys) == 0 {
			l = &Ledger{}
			l.Reserve(len(keys))
		}
		k := keys[i%len(keys)]
		l.Taken(k)
		l.Trained(k, Training{Step: i})
	}
}
