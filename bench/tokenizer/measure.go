package main

import (
	"runtime"
	"slices"
	"time"

	"github.com/tandemrl/tandem/tokenizer"
)

// sink keeps the compiler from dropping the timed work.
var sink int

// benchCorpus measures one model on one text: first Hugging Face's ids (the
// reference, and what both decode), tandem's ids against them, then timed
// rounds, alternating HF and tandem, the best of each kept.
func benchCorpus(o *hfOracle, tok *tokenizer.Tokenizer, c corpus, rounds int) (CorpusResult, error) {
	cr := CorpusResult{Corpus: c.name, Bytes: c.bytes, Chunks: len(c.chunks)}

	// Cold: the first encode of this text by each (tandem's first pass is
	// also its check against HF's ids).
	cold, err := o.call(hfRequest{Op: "bench_encode", Texts: c.chunks})
	if err != nil {
		return cr, err
	}
	cr.HFEncodeColdTPS = perSecond(cold.Tokens, cold.NS)
	start := time.Now()
	ours := make([][]int, len(c.chunks))
	for i, s := range c.chunks {
		ours[i] = tok.Encode(s, tokenizer.EncodeOptions{})
	}
	coldNS := time.Since(start).Nanoseconds()

	ref, err := o.call(hfRequest{Op: "encode_all", Texts: c.chunks})
	if err != nil {
		return cr, err
	}
	for i, ids := range ref.IDsList {
		cr.Tokens += len(ids)
		if !slices.Equal(ids, ours[i]) {
			cr.MismatchedChunks++
		}
	}
	cr.TandemEncodeColdTPS = perSecond(cr.Tokens, coldNS)
	words, err := o.call(hfRequest{Op: "words", Texts: c.chunks})
	if err != nil {
		return cr, err
	}
	cr.Words = words.Words

	var best struct{ hf, hfBatch, ours, hfDec, oursDec int64 }
	keep := func(p *int64, ns int64) {
		if *p == 0 || ns < *p {
			*p = ns
		}
	}
	for range rounds {
		a, err := o.call(hfRequest{Op: "bench_encode", Texts: c.chunks})
		if err != nil {
			return cr, err
		}
		keep(&best.hf, a.NS)
		keep(&best.hfBatch, a.BatchNS)
		keep(&best.ours, timeEncode(tok, c.chunks))

		d, err := o.call(hfRequest{Op: "bench_decode", IDs: ref.IDsList})
		if err != nil {
			return cr, err
		}
		keep(&best.hfDec, d.NS)
		ns, err := timeDecode(tok, ref.IDsList)
		if err != nil {
			return cr, err
		}
		keep(&best.oursDec, ns)
	}
	cr.TandemEncodeTPS = perSecond(cr.Tokens, best.ours)
	cr.HFEncodeTPS = perSecond(cr.Tokens, best.hf)
	cr.HFEncodeBatchTPS = perSecond(cr.Tokens, best.hfBatch)
	cr.EncodeRatio = cr.TandemEncodeTPS / max(cr.HFEncodeTPS, cr.HFEncodeBatchTPS)
	cr.TandemDecodeTPS = perSecond(cr.Tokens, best.oursDec)
	cr.HFDecodeTPS = perSecond(cr.Tokens, best.hfDec)
	cr.DecodeRatio = cr.TandemDecodeTPS / cr.HFDecodeTPS

	// Allocations of one warm pass (the word cache is filled by now).
	mallocs, bytes := allocs(func() { timeEncode(tok, c.chunks) })
	cr.AllocsPerWord = float64(mallocs) / float64(max(cr.Words, 1))
	cr.AllocsPerToken = float64(mallocs) / float64(max(cr.Tokens, 1))
	cr.AllocsPerChunk = float64(mallocs) / float64(len(c.chunks))
	cr.BytesPerToken = float64(bytes) / float64(max(cr.Tokens, 1))
	return cr, nil
}

func timeEncode(tok *tokenizer.Tokenizer, chunks []string) int64 {
	start := time.Now()
	n := 0
	for _, s := range chunks {
		n += len(tok.Encode(s, tokenizer.EncodeOptions{}))
	}
	ns := time.Since(start).Nanoseconds()
	sink += n
	return ns
}

func timeDecode(tok *tokenizer.Tokenizer, idsList [][]int) (int64, error) {
	start := time.Now()
	n := 0
	for _, ids := range idsList {
		s, err := tok.Decode(ids, false)
		if err != nil {
			return 0, err
		}
		n += len(s)
	}
	ns := time.Since(start).Nanoseconds()
	sink += n
	return ns, nil
}

// allocs counts the heap allocations and bytes of f (runtime.MemStats; the
// benchmark runs nothing else meanwhile).
func allocs(f func()) (mallocs, bytes uint64) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.Mallocs - before.Mallocs, after.TotalAlloc - before.TotalAlloc
}

func perSecond(tokens int, ns int64) float64 {
	if ns <= 0 {
		return 0
	}
	return float64(tokens) / (float64(ns) / 1e9)
}
