package buffer

import (
	"context"
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
