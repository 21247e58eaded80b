package ui

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkRunPage100k measures the run page of a 100,000-step run folder
// (every line a full runlog.Record with extras): handler time and bytes
// allocated per page (go test -bench RunPage -benchmem ./ui/).
func BenchmarkRunPage100k(b *testing.B) {
	root := b.TempDir()
	fixture{name: "big", steps: 100_000, evalEvery: 1000, summary: "ok"}.write(b, root)
	h, err := New(root, Options{})
	require.NoError(b, err)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/runs/big", nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d", rec.Code)
		}
		b.ReportMetric(float64(rec.Body.Len()), "page-bytes")
	}
}
