package tokenizer

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the synthetic tokenizers in testdata/")

// The synthetic tokenizers in testdata/ are what helpers_test.go builds;
// go test -run TestTestdataUpToDate -update rewrites them (then
// testdata/golden.json must be made again with Hugging Face's outputs).
func TestTestdataUpToDate(t *testing.T) {
	for name, data := range testdataFiles(t) {
		var buf bytes.Buffer
		require.NoError(t, json.Indent(&buf, data, "", " "))
		buf.WriteByte('\n')
		path := filepath.Join("testdata", name)
		if *update {
			require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
			continue
		}
		have, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, buf.String(), string(have), "%s is stale: go test -run TestTestdataUpToDate -update", path)
	}
}
