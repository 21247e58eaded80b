package loop

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tandemrl/tandem/policy"
)

// StepMetrics describes one learner step. The observer owns the value it
// receives (its slices and maps are not reused).
type StepMetrics struct {
	// Step numbers learner steps from Deps.StartStep.
	Step int `json:"step"`
	// Version is the trainer's version after the step.
	Version policy.Version `json:"version"`
	// Served is the version every sampler served when the step ended.
	Served policy.Version `json:"served"`
	// Groups, Samples and Tokens count what the step trained on (Tokens:
	// sampled tokens).
	Groups  int `json:"groups"`
	Samples int `json:"samples"`
	Tokens  int `json:"tokens"`
	// Staleness[i] is the number of the batch's groups with staleness i.
	Staleness    []int `json:"staleness"`
	MaxStaleness int   `json:"max_staleness"`
	// MeanReward is the mean return of the batch's trajectories.
	MeanReward float64 `json:"mean_reward"`
	// LogprobGap is the mean |sampler − trainer| log-prob over the sampled
	// tokens: ~0 when the sampler serves what the trainer holds and the
	// data is fresh; a persistent gap with staleness 0 means weights never
	// reached the sampler. Valid is false when the trainer returned no
	// log-probs.
	LogprobGap      float64 `json:"logprob_gap"`
	LogprobGapValid bool    `json:"logprob_gap_valid"`
	// ReplicaLogprobGap is LogprobGap per sampler replica, for groups a
	// pool of replicas sampled (rl.Group.Replica); nil when none did.
	ReplicaLogprobGap map[string]float64 `json:"replica_logprob_gap,omitempty"`
	// Cumulative counts since the run started.
	Dropped  int64 `json:"dropped"`
	Requeued int64 `json:"requeued"`
	Failed   int64 `json:"failed"`
	Panics   int64 `json:"panics"`
	// InFlight is the number of rollouts running at the step's end;
	// Buffered the number of groups waiting in the buffer.
	InFlight int64 `json:"in_flight"`
	Buffered int   `json:"buffered"`
	// Metrics holds the trainer's and the algorithm's numbers
	// ("loss:sum", "advantage:mean", ...).
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Data position after the step when the dataset reports one (-1
	// otherwise): what a resumed run starts from.
	DataEpoch int `json:"data_epoch"`
	DataPos   int `json:"data_pos"`
	// Checkpoint is set on steps that saved the training state.
	Checkpoint *policy.Ref `json:"checkpoint,omitempty"`
	// Timings: waiting for the batch, training (forward-backward and
	// optimizer steps), publishing, and the whole step.
	Wait    time.Duration `json:"wait_ns"`
	Train   time.Duration `json:"train_ns"`
	Publish time.Duration `json:"publish_ns"`
	Total   time.Duration `json:"total_ns"`
}

// observerQueue delivers values (step metrics, ledger changes) to an
// observer from its own goroutine so that a slow observer never blocks the
// loop: when the queue is full the newest values are dropped and counted.
type observerQueue[T any] struct {
	fn      func(T)
	mu      sync.Mutex
	q       []T
	wake    chan struct{} // size 1: a pending wake-up
	closed  bool
	dropped atomic.Int64
	limit   int
}

func newObserverQueue[T any](fn func(T), limit int) *observerQueue[T] {
	return &observerQueue[T]{fn: fn, wake: make(chan struct{}, 1), limit: limit}
}

func (o *observerQueue[T]) push(m T) {
	if o == nil {
		return
	}
	o.mu.Lock()
	if len(o.q) >= o.limit {
		o.mu.Unlock()
		o.dropped.Add(1)
		return
	}
	o.q = append(o.q, m)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// close makes run return once the queue is empty.
func (o *observerQueue[T]) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// run delivers queued metrics until close (all delivered) or ctx ends.
func (o *observerQueue[T]) run(ctx context.Context) {
	for {
		o.mu.Lock()
		batch := o.q
		o.q = nil
		closed := o.closed
		o.mu.Unlock()
		for _, m := range batch {
			o.fn(m)
		}
		if closed && len(batch) == 0 {
			return
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-o.wake:
		case <-ctx.Done():
			return
		}
	}
}
