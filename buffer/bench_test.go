package buffer

import (
	"context"
	"sync"
	"testing"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
)

// BenchmarkAdmitPutTake measures the buffer's cost per group on one
// goroutine: admission, delivery and a share of a batch Take (64 groups per
// batch, k = 2, pacing).
func BenchmarkAdmitPutTake(b *testing.B) {
	const gpb = 64
	buf, err := New(Config{GroupsPerBatch: gpb, MaxStaleness: 2}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	buf.Serve(0)
	var dst []rl.Group
	step := 0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		v, err := buf.Admit(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if err := buf.Put(ctx, rl.Group{ID: uint64(i), Admitted: v, Version: v}); err != nil {
			b.Fatal(err)
		}
		if i%gpb == gpb-1 {
			if dst, err = buf.Take(ctx, policy.Version(step), dst[:0]); err != nil {
				b.Fatal(err)
			}
			step++
			buf.Serve(policy.Version(step))
		}
	}
}

// BenchmarkWorkersLearner measures the cost per group of the waiting paths:
// 16 rollout workers loop in PutAdmit (parking when the window is full) and
// the learner takes batches of 64 (k = 2, pacing), so every batch goes
// through grants and wake-ups. One op is one batch; ns/group is the figure.
func BenchmarkWorkersLearner(b *testing.B) {
	const gpb, workers = 64, 16
	buf, err := New(Config{GroupsPerBatch: gpb, MaxStaleness: 2}, nil)
	if err != nil {
		b.Fatal(err)
	}
	buf.Serve(0)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			// A context of its own, as rollout.Workers gives each worker:
			// parked workers do not all select on one Done channel.
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			v, err := buf.Admit(ctx)
			for err == nil {
				v, _, err = buf.PutAdmit(ctx, rl.Group{Admitted: v, Version: v})
			}
		})
	}
	var dst []rl.Group
	step := 0
	b.ReportAllocs()
	for b.Loop() {
		if dst, err = buf.Take(ctx, policy.Version(step), dst[:0]); err != nil {
			b.Fatal(err)
		}
		step++
		buf.Serve(policy.Version(step))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*gpb), "ns/group")
	cancel()
	buf.Close()
	wg.Wait()
}
