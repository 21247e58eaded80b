package samplerpool

import (
	"context"
	"fmt"
	"testing"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// zeroSampler answers at once with a shared, empty output: the benchmark
// measures the pool's routing alone.
type zeroSampler struct{ out rl.SampleOutput }

func (z *zeroSampler) Sample(context.Context, rl.ModelInput, int, rl.SamplingParams) (rl.SampleOutput, error) {
	return z.out, nil
}
func (z *zeroSampler) Load(_ context.Context, ref policy.Ref) error {
	z.out.Version = ref.Version
	return nil
}

func benchPool(b *testing.B, n int) *Pool {
	reps := make([]Replica, n)
	for i := range reps {
		reps[i] = Replica{Name: fmt.Sprintf("r%d", i), Sampler: &zeroSampler{}}
	}
	p, err := New(reps, Config{})
	if err != nil {
		b.Fatal(err)
	}
	if err := p.Load(context.Background(), policy.Ref{Version: 1}); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkRouting is the pool's overhead per Sample over zero-latency
// replicas (target ≤ 1 µs), from one goroutine and from GOMAXPROCS.
func BenchmarkRouting(b *testing.B) {
	prompt := rl.Tokens([]int{1, 2, 3})
	sp := rl.SamplingParams{MaxTokens: 1}
	for _, n := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			p := benchPool(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Sample(ctx, prompt, 1, sp); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("replicas=%d/parallel", n), func(b *testing.B) {
			p := benchPool(b, n)
			ctx := context.Background()
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := p.Sample(ctx, prompt, 1, sp); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
