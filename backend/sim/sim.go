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
