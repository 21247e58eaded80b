package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/tandemrl/tandem/engine"
)

// concurrency is the continuous-batching comparison: the same tokens drawn
// as calls concurrent single-sample calls on the batched sampler, as one
// call of n = calls, and as single-sample calls on the serialized sampler
// (SamplerOptions.Serial, one call at a time: the sampler before
// continuous batching), each in tokens sampled per second.
type concurrency struct {
	Calls            int     `json:"calls"`
	Rounds           int     `json:"rounds"`
	ConcurrentTokS   float64 `json:"concurrent_tokens_per_s"`
	OneCallTokS      float64 `json:"one_call_tokens_per_s"`
	SerialTokS       float64 `json:"serial_tokens_per_s"`
	SerialOneCallTok float64 `json:"serial_one_call_tokens_per_s"`
	// ConcurrentOverOneCall is ConcurrentTokS / OneCallTokS (target ≥ 0.8);
	// ConcurrentOverSerial is ConcurrentTokS / SerialTokS.
	ConcurrentOverOneCall float64 `json:"concurrent_over_one_call"`
	ConcurrentOverSerial  float64 `json:"concurrent_over_serial"`
}

// goConcurrency measures concurrency with calls callers sampling s.NewTokens
// tokens each from one prompt of s.PromptLen tokens. The two batched forms
// run rounds times, alternating, and each keeps its best round (noise on a
// shared machine only slows a round down); the serialized ones, far
// slower, run once.
func goConcurrency(s shapes, base *engine.Model[float32], ad *engine.Adapter[float32], calls, rounds int) (concurrency, error) {
	out := concurrency{Calls: calls, Rounds: rounds}
	prompt := randomTokens(3, s.PromptLen, s.Vocab)
	p := engine.SamplingParams{MaxTokens: s.NewTokens, Temperature: 1}
	batched, err := engine.NewSampler(base, engine.SamplerOptions{Threads: s.Threads})
	if err != nil {
		return out, err
	}
	defer batched.Close()
	serial, err := engine.NewSampler(base, engine.SamplerOptions{Threads: s.Threads, Serial: true})
	if err != nil {
		return out, err
	}
	for _, smp := range []*engine.Sampler[float32]{batched, serial} {
		if err := smp.SetAdapter(ad); err != nil {
			return out, err
		}
	}
	// Warm both up with one small call.
	for _, smp := range []*engine.Sampler[float32]{batched, serial} {
		if _, _, err := smp.Sample(context.Background(), prompt, 1, engine.SamplingParams{MaxTokens: 2, Temperature: 1}); err != nil {
			return out, err
		}
	}
	for range rounds {
		c, err := tokensPerSecond(batched, prompt, p, calls, 1)
		if err != nil {
			return out, err
		}
		o, err := tokensPerSecond(batched, prompt, p, 1, calls)
		if err != nil {
			return out, err
		}
		out.ConcurrentTokS, out.OneCallTokS = max(out.ConcurrentTokS, c), max(out.OneCallTokS, o)
	}
	if out.SerialTokS, err = tokensPerSecond(serial, prompt, p, calls, 1); err != nil {
		return out, err
	}
	if out.SerialOneCallTok, err = tokensPerSecond(serial, prompt, p, 1, calls); err != nil {
		return out, err
	}
	out.ConcurrentOverOneCall = out.ConcurrentTokS / out.OneCallTokS
	out.ConcurrentOverSerial = out.ConcurrentTokS / out.SerialTokS
	fmt.Fprintf(os.Stderr, "go:    %d concurrent calls %8.1f tokens/s   one call of n=%d %8.1f   serialized %8.1f (one call of n=%d: %8.1f)   concurrent/one call %.2fx   concurrent/serialized %.2fx\n",
		calls, out.ConcurrentTokS, calls, out.OneCallTokS, out.SerialTokS, calls, out.SerialOneCallTok, out.ConcurrentOverOneCall, out.ConcurrentOverSerial)
	return out, nil
}

// tokensPerSecond runs callers concurrent Sample calls of n samples each
// (seeds 1, 2, …) on smp and returns the tokens sampled per second.
func tokensPerSecond(smp *engine.Sampler[float32], prompt []int, p engine.SamplingParams, callers, n int) (float64, error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		total    int
		firstErr error
	)
	t0 := time.Now()
	for c := range callers {
		wg.Go(func() {
			q := p
			q.Seed = int64(c + 1)
			seqs, _, err := smp.Sample(context.Background(), prompt, n, q)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			for _, sq := range seqs {
				total += len(sq.Tokens)
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(total) / time.Since(t0).Seconds(), nil
}
