package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLogitChunksAreEven checks how the output layer cuts n rows into
// chunks of logits: never over the bound, as few chunks as it allows, all
// of one size but the last, which is shorter by fewer rows than there are
// chunks (a small last chunk would pack the whole unembedding matrix for a
// few rows).
func TestLogitChunksAreEven(t *testing.T) {
	t.Parallel()
	require.Equal(t, 276, logitRows(151936)) // Qwen's vocabulary: a 255-row sequence is one chunk
	require.Equal(t, 64, logitRows(1<<30))
	for _, bound := range []int{0, 1, 3, 64, 220} {
		a := &acts[float32]{chunkRows: bound}
		most := bound
		if bound == 0 {
			most = logitRows(151936)
		}
		for n := 0; n <= 700; n++ {
			chunk := a.chunk(151936, n)
			if n == 0 {
				continue
			}
			require.LessOrEqual(t, chunk, most, "bound %d, %d rows", bound, n)
			parts := (n + most - 1) / most
			require.Equal(t, (n+chunk-1)/chunk, parts, "bound %d, %d rows: chunks of %d", bound, n, chunk)
			last := n - (parts-1)*chunk
			require.True(t, last >= 1 && last > chunk-parts, "bound %d, %d rows: %d chunks of %d leave %d", bound, n, parts, chunk, last)
		}
	}
}
