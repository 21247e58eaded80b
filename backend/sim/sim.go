// Package sim is a simulated backend: a Trainer and a Sampler that honour
// tandem's contracts — ordered trainer futures, policy versions that count
// optimizer steps, samplers that report the version they loaded — with
// configurable latencies and no learning. It exists for tests and pipeline
// benchmarks; with zero latencies its calls cost a few hundred nanoseconds.
//
// Log-probabilities are a deterministic function of (version, token,
// position), so a trainer and a sampler at the same version agree exactly
// and a sampler serving an older version shows a log-prob gap: the signal a
// weight-sync bug gives on a real backend.
package sim

import (
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tandemrl/tandem/policy"
)

// Latency draws the duration of one call. It must be safe for concurrent
// use. A nil Latency means zero.
type Latency func() time.Duration

// Fixed returns a constant latency.
func Fixed(d time.Duration) Latency { return func() time.Duration { return d } }

// LogNormal returns latencies whose logarithm is normal: the median is
// median and sigma the standard deviation of the log (0.5 gives a long
// but not extreme tail). Draws are reproducible for a seed.
func LogNormal(median time.Duration, sigma float64, seed uint64) Latency {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	return func() time.Duration {
		mu.Lock()
		z := rng.NormFloat64()
		mu.Unlock()
		return time.Duration(float64(median) * math.Exp(sigma*z))
	}
}

func draw(l Latency) time.Duration {
	if l == nil {
		return 0
	}
	return l()
}

// LogProb is the simulated log-probability of token at position pos (its
// index in the full sequence, prompt included) under policy version v: a
// value in [−4, −0.01) that changes with every version.
func LogProb(v policy.Version, token, pos int) float64 {
	h := mix(uint64(v)*0x9e3779b97f4a7c15 ^ uint64(token)<<20 ^ uint64(pos))
	return -0.01 - 3.99*float64(h>>11)/float64(1<<53)
}

// mix is splitmix64's finalizer.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// sequencer resolves operations in submission order once their simulated
// completion time has come. Each operation starts when the previous one
// ends (one device), so latencies add up like a real trainer's queue.
type sequencer struct {
	mu    sync.Mutex
	tail  time.Time
	q     []pending
	timer *time.Timer
}

type pending struct {
	due  time.Time
	fire func()
}

// submit queues fire to run after lat (after everything queued before it).
// fire runs with the sequencer's lock held, so it must not block or submit.
func (s *sequencer) submit(lat time.Duration, fire func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if lat <= 0 && len(s.q) == 0 {
		fire()
		return
	}
	now := time.Now()
	start := s.tail
	if start.Before(now) {
		start = now
	}
	due := start.Add(lat)
	s.tail = due
	s.q = append(s.q, pending{due: due, fire: fire})
	if len(s.q) == 1 {
		s.arm(due.Sub(now))
	}
}

func (s *sequencer) arm(d time.Duration) {
	if s.timer == nil {
		s.timer = time.AfterFunc(d, s.wake)
		return
	}
	s.timer.Reset(d)
}

func (s *sequencer) wake() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	i := 0
	for ; i < len(s.q) && !s.q[i].due.After(now); i++ {
		s.q[i].fire()
		s.q[i].fire = nil
	}
	s.q = append(s.q[:0], s.q[i:]...)
	if len(s.q) > 0 {
		s.arm(s.q[0].due.Sub(now))
	}
}
