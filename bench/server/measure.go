package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/tandemrl/tandem/backend/local"
	"github.com/tandemrl/tandem/backend/openai"
	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/basemodel"
	"github.com/tandemrl/tandem/engine"
	"github.com/tandemrl/tandem/rl"
)

const apiKey = "bench-key-0123456789"

// sampleFn is one request of the load.
type sampleFn func(ctx context.Context) error

// load runs clients goroutines that together make n calls of fn, and
// returns each call's latency, the errors and the wall time.
func load(ctx context.Context, clients, n int, fn sampleFn) ([]time.Duration, int, time.Duration) {
	var (
		mu   sync.Mutex
		lats = make([]time.Duration, 0, n)
		errs int
		next = make(chan struct{}, n)
		wg   sync.WaitGroup
	)
	for range n {
		next <- struct{}{}
	}
	close(next)
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				t := time.Now()
				err := fn(ctx)
				d := time.Since(t)
				mu.Lock()
				if err != nil {
					errs++
				} else {
					lats = append(lats, d)
				}
				mu.Unlock()
				if ctx.Err() != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	return lats, errs, time.Since(start)
}

// quantile returns the q-quantile of sorted ds (nearest rank) in ms.
func quantile(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	i = min(max(i, 0), len(ds)-1)
	return float64(ds[i]) / float64(time.Millisecond)
}

type stats struct {
	rps, p50, p99 float64
	ok, errs      int
}

func summarize(lats []time.Duration, errs int, wall time.Duration) stats {
	slices.Sort(lats)
	return stats{rps: float64(len(lats)) / wall.Seconds(), p50: quantile(lats, 0.5), p99: quantile(lats, 0.99), ok: len(lats), errs: errs}
}

func measure(ctx context.Context, cfg config, out io.Writer) (Result, error) {
	res := Result{Target: "process", BaseModel: basemodel.Name, MaxTokens: cfg.maxTokens, NumSamples: cfg.numSamples, Rounds: cfg.rounds, Threads: cfg.threads}
	if cfg.inprocess {
		res.Target = "inprocess"
	}
	base, err := basemodel.Load()
	if err != nil {
		return res, err
	}
	var tok engine.Tokenizer
	ids, err := tok.Encode("What is 12 + 35?")
	if err != nil {
		return res, err
	}
	prompt := rl.Tokens(append([]int{engine.BOS}, ids...))
	// A fixed seed and no stop token: every call does the same work.
	seed := int64(1)
	params := rl.SamplingParams{MaxTokens: cfg.maxTokens, Temperature: 1, Seed: &seed}

	// The in-process engine, batched (the default) and serialized (one
	// call at a time, the behaviour before continuous batching).
	inproc, err := local.NewSampler(base, local.SamplerOptions{Threads: cfg.threads})
	if err != nil {
		return res, err
	}
	defer inproc.Close()
	serial, err := local.NewSampler(base, local.SamplerOptions{Threads: cfg.threads, Serial: true})
	if err != nil {
		return res, err
	}
	defer serial.Close()
	url, stopTarget, err := startTarget(ctx, cfg, out)
	if err != nil {
		return res, err
	}
	defer stopTarget()

	maxClients := slices.Max(cfg.clients)
	tr := &http.Transport{MaxIdleConns: maxClients + 8, MaxIdleConnsPerHost: maxClients + 8, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client, err := tinker.New(ctx, tinker.Options{BaseURL: url, APIKey: apiKey, HTTPClient: &http.Client{Transport: tr}, PollInterval: time.Millisecond})
	if err != nil {
		return res, fmt.Errorf("connect to %s: %w", url, err)
	}
	defer client.Close()
	remote := client.NewSampler(basemodel.Name)
	oai, err := openai.New(ctx, openai.Options{BaseURL: url, APIKey: apiKey, Dialect: openai.VLLM, Model: basemodel.Name, HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		return res, fmt.Errorf("connect to %s/v1: %w", url, err)
	}

	call := func(s rl.Sampler) sampleFn {
		return func(ctx context.Context) error {
			_, err := s.Sample(ctx, prompt, cfg.numSamples, params)
			return err
		}
	}
	// Warm both sides: the server loads its sampler on the first call, and
	// the engine's first hundred or so calls in a fresh process run up to
	// twice as slow as later ones (buffers, heap growth).
	for _, s := range []rl.Sampler{inproc, serial, remote, oai} {
		if _, errs, _ := load(ctx, 1, cfg.warmup, call(s)); errs > 0 {
			return res, errors.New("warm-up calls failed")
		}
	}
	fmt.Fprintf(out, "asample of %d×%d tokens, %s, %d thread(s) per call, best of %d rounds, target %s at %s\n", cfg.numSamples, cfg.maxTokens, basemodel.Name, cfg.threads, cfg.rounds, res.Target, url)
	fmt.Fprintf(out, "%8s %9s %10s %10s %10s | %10s %10s %10s | %6s %6s | %10s %10s %10s | %10s %10s %10s | %6s\n", "clients", "requests", "req/s", "p50 ms", "p99 ms", "inproc/s", "p50 ms", "p99 ms", "thr×", "lat×", "openai/s", "p50 ms", "p99 ms", "serial/s", "p50 ms", "p99 ms", "batch×")
	for _, c := range cfg.clients {
		n := max(cfg.minReqs, c*cfg.perClient)
		// Alternate the two sides and keep each side's best round: the
		// machine may be shared, and noise only ever slows a round down.
		var li, ls, lo, lz stats
		for r := range cfg.rounds {
			i := summarize(load(ctx, c, n, call(inproc)))
			s := summarize(load(ctx, c, n, call(remote)))
			o := summarize(load(ctx, c, n, call(oai)))
			z := summarize(load(ctx, c, n, call(serial)))
			if r == 0 || z.rps > lz.rps {
				lz = z
			}
			if r == 0 || i.rps > li.rps {
				li = i
			}
			if r == 0 || s.rps > ls.rps {
				ls = s
			}
			if r == 0 || o.rps > lo.rps {
				lo = o
			}
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		lv := Level{
			Clients: c, Requests: n, Errors: ls.errs + li.errs + lo.errs + lz.errs,
			SerialRPS: lz.rps, SerialP50MS: lz.p50, SerialP99MS: lz.p99, BatchSpeedup: li.rps / lz.rps,
			OpenAIRPS: lo.rps, OpenAIP50MS: lo.p50, OpenAIP99MS: lo.p99,
			RPS: ls.rps, P50MS: ls.p50, P99MS: ls.p99,
			InProcRPS: li.rps, InProcP50MS: li.p50, InProcP99MS: li.p99,
			ThroughputRatio: li.rps / ls.rps, LatencyRatio: ls.p50 / li.p50,
		}
		res.Levels = append(res.Levels, lv)
		fmt.Fprintf(out, "%8d %9d %10.1f %10.2f %10.2f | %10.1f %10.2f %10.2f | %6.2f %6.2f | %10.1f %10.2f %10.2f | %10.1f %10.2f %10.2f | %6.2f\n", c, n, lv.RPS, lv.P50MS, lv.P99MS, lv.InProcRPS, lv.InProcP50MS, lv.InProcP99MS, lv.ThroughputRatio, lv.LatencyRatio, lv.OpenAIRPS, lv.OpenAIP50MS, lv.OpenAIP99MS, lv.SerialRPS, lv.SerialP50MS, lv.SerialP99MS, lv.BatchSpeedup)
		if lv.Errors > 0 {
			return res, fmt.Errorf("%d clients: %d calls failed", c, lv.Errors)
		}
	}
	if len(res.Levels) > 0 {
		l := res.Levels[0]
		res.OverheadMS, res.Overhead = l.P50MS-l.InProcP50MS, l.LatencyRatio
	}
	return res, nil
}
