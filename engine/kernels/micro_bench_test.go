package kernels

import "testing"

// BenchmarkMicroKernel measures one micro-kernel on cache-resident panels:
// the ceiling the blocked driver can reach on one core.
func BenchmarkMicroKernel(b *testing.B) {
	const k = 256
	for _, im := range sgemmImpls() {
		a := make([]float32, im.mr*k)
		bp := make([]float32, im.nr*k)
		c := make([]float32, im.mr*im.nr)
		b.Run(im.name, func(b *testing.B) {
			for b.Loop() {
				im.kernel(k, a, 1, im.mr, bp, im.nr, c, im.nr, 1, 0, nil)
			}
			b.ReportMetric(2*float64(im.mr*im.nr*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
