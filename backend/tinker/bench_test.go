package tinker_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tandemrl/tandem/backend/tinker"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/server"
	"github.com/tandemrl/tandem/server/servertest"
)

// BenchmarkSample measures asample round trips (submit + poll) through the
// client and a sampler-role server over the fake backend, with 1, 16 and
// 256 concurrent callers, and the same calls made in-process for the
// protocol's overhead. It reports p50/p99 latency in microseconds.
func BenchmarkSample(b *testing.B) {
	prompt := rl.Tokens([]int{1, 2, 3, 4})
	params := rl.SamplingParams{MaxTokens: 8}
	be := &servertest.Backend{}
	b.Run("in-process", func(b *testing.B) {
		smp, _ := be.NewSampler(context.Background(), base)
		lat := make([]time.Duration, 0, b.N)
		for b.Loop() {
			start := time.Now()
			if _, err := smp.Sample(context.Background(), prompt, 1, params); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(start))
		}
		report(b, lat)
	})
	for _, clients := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			srv, err := server.New(server.Config{APIKeys: []string{apiKey}, Role: server.RoleSampler, MaxInFlight: 1024},
				server.Options{Backend: be})
			if err != nil {
				b.Fatal(err)
			}
			hs := httptest.NewServer(srv)
			tr := &http.Transport{MaxIdleConnsPerHost: clients}
			c, err := tinker.New(context.Background(), tinker.Options{BaseURL: hs.URL, APIKey: apiKey, HTTPClient: &http.Client{Transport: tr}, PollInterval: time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				_ = c.Close()
				tr.CloseIdleConnections()
				hs.Close()
				_ = srv.Close(context.Background())
			}()
			smp := c.NewSampler(base)
			var mu sync.Mutex
			lat := make([]time.Duration, 0, b.N)
			work := make(chan struct{})
			var wg sync.WaitGroup
			b.ResetTimer()
			for range clients {
				wg.Go(func() {
					for range work {
						start := time.Now()
						if _, err := smp.Sample(context.Background(), prompt, 1, params); err != nil {
							b.Error(err)
						}
						d := time.Since(start)
						mu.Lock()
						lat = append(lat, d)
						mu.Unlock()
					}
				})
			}
			for range b.N {
				work <- struct{}{}
			}
			close(work)
			wg.Wait()
			b.StopTimer()
			report(b, lat)
		})
	}
}

func report(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}
