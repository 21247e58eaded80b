package runlog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// Record is one step's metrics, one line of metrics.jsonl.
type Record struct {
	Step    int     `json:"step"`
	Version int64   `json:"version"`
	Seconds float64 `json:"seconds"` // wall time since the run started

	RewardMean float64  `json:"reward_mean"`
	Accuracy   *float64 `json:"accuracy,omitempty"` // held-out accuracy, on steps that evaluated
	Loss       float64  `json:"loss"`

	// Staleness maps a staleness (in optimizer steps) to the number of
	// groups of that staleness in the step's batch.
	Staleness    map[int]int `json:"staleness"`
	MaxStaleness int         `json:"max_staleness"`
	Dropped      int         `json:"dropped"`
	Requeued     int         `json:"requeued"`
	Filtered     int         `json:"filtered"`
	LogprobGap   float64     `json:"logprob_gap"` // mean |sampler − trainer| log-prob over trained tokens

	Samples       int     `json:"samples"`
	Tokens        int     `json:"tokens"`
	TokensPerSec  float64 `json:"tokens_per_s"`
	SamplesPerSec float64 `json:"samples_per_s"`
	ServedVersion int64   `json:"served_version"`

	Extra map[string]float64 `json:"extra,omitempty"`
}

// Validate checks that every number is finite and counts are not negative.
func (r Record) Validate() error {
	floats := map[string]float64{
		"seconds": r.Seconds, "reward_mean": r.RewardMean, "loss": r.Loss,
		"logprob_gap": r.LogprobGap, "tokens_per_s": r.TokensPerSec, "samples_per_s": r.SamplesPerSec,
	}
	if r.Accuracy != nil {
		floats["accuracy"] = *r.Accuracy
	}
	for k, v := range r.Extra {
		floats["extra."+k] = v
	}
	for name, v := range floats {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("field %s is %v, want a finite number", name, v)
		}
	}
	if r.Step < 0 || r.Dropped < 0 || r.Requeued < 0 || r.Filtered < 0 || r.Samples < 0 || r.Tokens < 0 {
		return errors.New("step and counts must not be negative")
	}
	for s, n := range r.Staleness {
		if s < 0 || n < 0 {
			return fmt.Errorf("staleness histogram entry %d:%d must not be negative", s, n)
		}
	}
	return nil
}

// ReadMetrics reads a metrics.jsonl stream. A malformed line is an error
// naming its line number; unknown fields are rejected so a typo in a
// hand-edited file does not pass silently.
func ReadMetrics(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if len(b) == 0 {
			continue
		}
		var rec Record
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rec); err != nil {
			return out, fmt.Errorf("metrics line %d: %w", line, err)
		}
		if err := rec.Validate(); err != nil {
			return out, fmt.Errorf("metrics line %d: %w", line, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("metrics line %d: %w", line+1, err)
	}
	return out, nil
}

// ReadMetricsFile reads the metrics.jsonl at path.
func ReadMetricsFile(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := ReadMetrics(f)
	if err != nil {
		return recs, fmt.Errorf("%s: %w", path, err)
	}
	return recs, nil
}
