package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tandemrl/tandem/backend/sim"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/samplerpool"
)

// PoolLevel is the pool mode at one replica count: every replica serves
// one call at a time (MaxOutstanding 1, as one batch slot of an inference
// server), calls take long-tailed (log-normal) times, and enough callers
// keep every replica busy. Utilisation is the replicas' busy time over
// their wall time; the best static assignment (each replica given its
// share of the calls up front, as round-robin does) finishes when its
// unluckiest replica does, and StaticUtilisation is what it would reach on
// the same draws. RoutingNS is the pool's own cost per call with
// zero-latency replicas, against calling a replica directly.
type PoolLevel struct {
	Replicas          int     `json:"replicas"`
	Calls             int     `json:"calls"`
	Seconds           float64 `json:"seconds"`
	CallsPerSecond    float64 `json:"calls_per_second"`
	IdealPerSecond    float64 `json:"ideal_calls_per_second"` // Σ replicas / mean latency
	Utilisation       float64 `json:"utilisation"`
	StaticUtilisation float64 `json:"static_utilisation"`
	VsStatic          float64 `json:"vs_static"` // Utilisation / StaticUtilisation
	RoutingNS         float64 `json:"routing_ns_per_call"`
}

// meter is a replica that records the time it spends in calls.
type meter struct {
	rl.Sampler
	busy atomic.Int64
}

func (m *meter) Sample(ctx context.Context, p rl.ModelInput, n int, sp rl.SamplingParams) (rl.SampleOutput, error) {
	t := time.Now()
	out, err := m.Sampler.Sample(ctx, p, n, sp)
	m.busy.Add(int64(time.Since(t)))
	return out, err
}

// runPool measures one PoolLevel.
func runPool(ctx context.Context, replicas, calls int, median time.Duration, sigma float64) (PoolLevel, error) {
	lv := PoolLevel{Replicas: replicas, Calls: calls}
	// The draws, fixed up front so the static assignment sees the same ones.
	lat := sim.LogNormal(median, sigma, uint64(replicas))
	draws := make([]time.Duration, calls)
	var total time.Duration
	for i := range draws {
		draws[i] = lat()
		total += draws[i]
	}
	var next atomic.Int64
	latency := func() time.Duration { return draws[int(next.Add(1)-1)%calls] }
	meters := make([]*meter, replicas)
	reps := make([]samplerpool.Replica, replicas)
	for i := range reps {
		meters[i] = &meter{Sampler: sim.NewSampler(sim.SamplerConfig{Latency: latency, Static: true})}
		reps[i] = samplerpool.Replica{Name: fmt.Sprintf("r%d", i), Sampler: meters[i]}
	}
	pool, err := samplerpool.New(reps, samplerpool.Config{MaxOutstanding: 1})
	if err != nil {
		return lv, err
	}
	params := rl.SamplingParams{MaxTokens: 4, Temperature: 1}
	prompt := rl.Tokens([]int{1, 2, 3})
	var (
		wg   sync.WaitGroup
		left atomic.Int64
		errs atomic.Int64
	)
	left.Store(int64(calls))
	start := time.Now()
	for range 2 * replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				if _, err := pool.Sample(ctx, prompt, 1, params); err != nil {
					errs.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if n := errs.Load(); n > 0 {
		return lv, fmt.Errorf("pool of %d: %d calls failed", replicas, n)
	}
	var busy time.Duration
	for _, m := range meters {
		busy += time.Duration(m.busy.Load())
	}
	lv.Seconds = wall.Seconds()
	lv.CallsPerSecond = float64(calls) / wall.Seconds()
	lv.IdealPerSecond = float64(replicas) / (total.Seconds() / float64(calls))
	lv.Utilisation = busy.Seconds() / (float64(replicas) * wall.Seconds())
	// Round-robin over the same draws: replica i takes calls i, i+n, …
	sums := make([]time.Duration, replicas)
	for i, d := range draws {
		sums[i%replicas] += d
	}
	var worst time.Duration
	for _, s := range sums {
		worst = max(worst, s)
	}
	lv.StaticUtilisation = total.Seconds() / (float64(replicas) * worst.Seconds())
	lv.VsStatic = lv.Utilisation / lv.StaticUtilisation

	// Routing cost: zero-latency replicas through the pool vs directly.
	zero := make([]samplerpool.Replica, replicas)
	for i := range zero {
		zero[i] = samplerpool.Replica{Name: fmt.Sprintf("z%d", i), Sampler: sim.NewSampler(sim.SamplerConfig{Static: true})}
	}
	zp, err := samplerpool.New(zero, samplerpool.Config{})
	if err != nil {
		return lv, err
	}
	const m = 200_000
	direct := zero[0].Sampler
	best := func(f func()) time.Duration {
		b := time.Duration(1 << 62)
		for range 3 {
			t := time.Now()
			f()
			b = min(b, time.Since(t))
		}
		return b
	}
	through := best(func() {
		for range m {
			_, _ = zp.Sample(ctx, prompt, 1, params)
		}
	})
	plain := best(func() {
		for range m {
			_, _ = direct.Sample(ctx, prompt, 1, params)
		}
	})
	lv.RoutingNS = float64(through-plain) / m
	return lv, nil
}
