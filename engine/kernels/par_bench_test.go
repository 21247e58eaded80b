package kernels

import (
	"fmt"
	"sync/atomic"
	"testing"
)

// BenchmarkParallelFor measures the fan-out itself: starting, feeding and
// joining the goroutines of one call whose items do almost nothing.
func BenchmarkParallelFor(b *testing.B) {
	for _, threads := range []int{2, 4} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			var sum atomic.Int64
			b.ReportAllocs()
			for b.Loop() {
				parallelFor(threads, 16, func(item, _ int) { sum.Add(int64(item)) })
			}
		})
	}
}
