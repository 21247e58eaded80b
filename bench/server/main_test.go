package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSmokeInProcess runs the benchmark at a tiny scale against an
// in-process server and checks the shape of its JSON line.
func TestSmokeInProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("samples the shipped model")
	}
	var out bytes.Buffer
	err := run(context.Background(), []string{"-inprocess", "-clients", "1,3", "-min-requests", "3", "-per-client", "1", "-rounds", "1", "-warmup", "2", "-max-tokens", "2", "-wire-sequences", "2", "-wire-tokens", "8", "-json"}, &out, &out)
	require.NoError(t, err, out.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	var res Result
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &res))
	assert.Equal(t, "inprocess", res.Target)
	require.Len(t, res.Levels, 2)
	for i, c := range []int{1, 3} {
		l := res.Levels[i]
		assert.Equal(t, c, l.Clients)
		assert.Equal(t, 3, l.Requests)
		assert.Zero(t, l.Errors)
		assert.Greater(t, l.RPS, 0.0)
		assert.LessOrEqual(t, l.P50MS, l.P99MS)
		assert.InDelta(t, l.InProcRPS/l.RPS, l.ThroughputRatio, 1e-9)
		assert.Greater(t, l.OpenAIRPS, 0.0, "the OpenAI surface is measured too")
		assert.Greater(t, l.SerialRPS, 0.0, "the serialized engine is measured too")
		assert.InDelta(t, l.InProcRPS/l.SerialRPS, l.BatchSpeedup, 1e-9)
		assert.LessOrEqual(t, l.OpenAIP50MS, l.OpenAIP99MS)
	}
	assert.InDelta(t, res.Levels[0].P50MS-res.Levels[0].InProcP50MS, res.OverheadMS, 1e-9)
	w := res.WireFormat
	assert.Equal(t, 2, w.Sequences)
	assert.Greater(t, w.JSONBytes, w.ProtoBytes)
	assert.InDelta(t, float64(w.JSONBytes)/float64(w.ProtoBytes), w.SizeRatio, 1e-9)
}

func TestQuantileNearestRank(t *testing.T) {
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(i+1) * time.Millisecond
	}
	assert.InDelta(t, 50, quantile(ds, 0.5), 1e-9)
	assert.InDelta(t, 99, quantile(ds, 0.99), 1e-9)
	assert.InDelta(t, 1, quantile(ds[:1], 0.99), 1e-9)
}

func TestRejectsBadFlags(t *testing.T) {
	var out bytes.Buffer
	for _, args := range [][]string{{"-clients", "0"}, {"-clients", "x"}, {"-rounds", "0"}} {
		err := run(context.Background(), args, &out, &out)
		assert.Error(t, err, args)
	}
}
