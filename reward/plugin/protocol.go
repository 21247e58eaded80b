package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// Request is one completion to score.
type Request struct {
	ID         uint64            `json:"id"`
	Prompt     string            `json:"prompt"`
	Completion string            `json:"completion"`
	Answer     string            `json:"answer,omitempty"`
	Info       map[string]string `json:"info,omitempty"`
}

// answer is a plugin's reply. Reward is raw so a non-number is reported as
// such, not as a decoding failure of the whole line.
type answer struct {
	ID     *uint64         `json:"id"`
	Reward json.RawMessage `json:"reward"`
	Error  *string         `json:"error"`
}

// Kind classifies a plugin failure.
type Kind string

const (
	KindTimeout Kind = "timeout" // no answer within the timeout
	KindCrash   Kind = "crash"   // the process exited or the connection failed
	KindGarbage Kind = "garbage" // the answer was not the protocol's JSON, or the reward not a finite number
	KindRemote  Kind = "remote"  // the plugin answered with an error
)

// Error is a failed request.
type Error struct {
	Plugin string
	ID     uint64
	Kind   Kind
	Msg    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("reward plugin %s: request %d: %s: %s", e.Plugin, e.ID, e.Kind, e.Msg)
}

// ErrClosed is returned by Score after Close.
var ErrClosed = errors.New("plugin: closed")

// decodeAnswer parses one answer line.
func decodeAnswer(line []byte) (id *uint64, reward float64, remote string, err error) {
	var a answer
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&a); err != nil {
		for _, tok := range []string{"NaN", "Infinity"} {
			if bytes.Contains(line, []byte(tok)) {
				return nil, 0, "", fmt.Errorf("reward is %s, want a finite number (got %q)", tok, clip(line))
			}
		}
		return nil, 0, "", fmt.Errorf("answer is not a JSON object: %v (got %q)", err, clip(line))
	}
	if a.Error != nil {
		return a.ID, 0, *a.Error, nil
	}
	if len(a.Reward) == 0 || string(a.Reward) == "null" {
		return a.ID, 0, "", fmt.Errorf("answer has no reward field (got %q)", clip(line))
	}
	r, err := parseReward(a.Reward)
	if err != nil {
		return a.ID, 0, "", err
	}
	return a.ID, r, "", nil
}

func parseReward(raw json.RawMessage) (float64, error) {
	var n json.Number
	if len(raw) > 0 && raw[0] == '"' {
		return 0, fmt.Errorf("reward %s is a string, not a number", clip(raw))
	}
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("reward %s is not a number", clip(raw))
	}
	f, err := n.Float64()
	if err != nil {
		return 0, fmt.Errorf("reward %s is not a finite number", clip(raw))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("reward %v is not a finite number", f)
	}
	return f, nil
}

func clip(b []byte) string {
	const max = 200
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
