package runlog

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
)

// SamplesFile is the run folder's rollout log: one Sample per line.
const SamplesFile = "samples.jsonl"

// Sample is one rollout a step trained on, one line of samples.jsonl: what
// a person reads when a reward function misbehaves.
type Sample struct {
	// Step is the learner step that trained on the rollout (0-based, as
	// Record.Step).
	Step int `json:"step"`
	// Group numbers the rollout's group within the step's batch; rollouts
	// of one group share a prompt.
	Group      int     `json:"group"`
	Prompt     string  `json:"prompt"`
	Completion string  `json:"completion"`
	Reward     float64 `json:"reward"`
	// Version is the policy version that generated the rollout, Staleness
	// the step's version minus it.
	Version   int64 `json:"version"`
	Staleness int   `json:"staleness"`
	// Replica names the sampler replica that answered ("" for one sampler).
	Replica string `json:"replica,omitempty"`
}

// Validate checks that the reward is finite and the counts not negative.
func (s Sample) Validate() error {
	if math.IsNaN(s.Reward) || math.IsInf(s.Reward, 0) {
		return fmt.Errorf("reward is %v, want a finite number", s.Reward)
	}
	if s.Step < 0 || s.Group < 0 || s.Version < 0 || s.Staleness < 0 {
		return errors.New("step, group, version and staleness must not be negative")
	}
	return nil
}

// SampleLog appends rollouts to a run folder's samples.jsonl. It is safe
// for concurrent use; each Log call writes its lines and flushes them.
type SampleLog struct {
	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	closed bool
}

// OpenSamples opens dir/samples.jsonl for appending, creating it.
func OpenSamples(dir string) (*SampleLog, error) {
	f, err := os.OpenFile(filepath.Join(dir, SamplesFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("runlog: open samples: %w", err)
	}
	return &SampleLog{f: f, w: bufio.NewWriter(f)}, nil
}

// Log appends one line per sample and flushes them. A sample that fails
// Validate fails the call before anything is written.
func (l *SampleLog) Log(samples []Sample) error {
	var buf []byte
	for i, s := range samples {
		if err := s.Validate(); err != nil {
			return fmt.Errorf("runlog: sample %d of step %d: %w", i, s.Step, err)
		}
		b, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("runlog: encode sample %d of step %d: %w", i, s.Step, err)
		}
		buf = append(append(buf, b...), '\n')
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("runlog: samples logged after close")
	}
	l.w.Write(buf)
	if err := l.w.Flush(); err != nil {
		return fmt.Errorf("runlog: write samples: %w", err)
	}
	return nil
}

// Close syncs and closes samples.jsonl. Later calls return nil.
func (l *SampleLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	err := l.w.Flush()
	if serr := l.f.Sync(); err == nil {
		err = serr
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("runlog: close samples: %w", err)
	}
	return nil
}
