package staleness

import (
	"context"
	"sync"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/sync/waitq"
)

// Gate is a Core made safe for concurrent use: rollout workers Acquire
// before they start and Release when they end; the learner reports batches
// with Take and the weight sync reports served versions with Serve. Waiting
// workers are admitted in arrival order.
type Gate struct {
	mu      sync.Mutex
	core    *Core
	waiters waitq.Queue[policy.Version]
	learner waitq.Queue[struct{}]
}

// NewGate returns a gate for cfg.
func NewGate(cfg Config) (*Gate, error) {
	c, err := NewCore(cfg)
	if err != nil {
		return nil, err
	}
	return &Gate{core: c}, nil
}

// Acquire blocks until a rollout may start or ctx ends. It returns the
// version the sampler served at admission. On error (ctx ended) the gate's
// state is unchanged.
func (g *Gate) Acquire(ctx context.Context) (policy.Version, error) {
	g.mu.Lock()
	if g.waiters.Len() == 0 {
		if v, ok := g.core.Admit(); ok {
			g.mu.Unlock()
			return v, nil
		}
	}
	w := g.waiters.Push()
	g.mu.Unlock()
	select {
	case <-w.C:
		v := w.Val
		g.waiters.Recycle(w)
		return v, nil
	case <-ctx.Done():
		g.mu.Lock()
		if !g.waiters.Remove(w) {
			// Granted while we gave up: undo the admission.
			g.core.Finish(w.Val, false)
			g.core.st.Admitted--
			g.core.st.Failed--
		}
		g.waiters.Recycle(w)
		g.grantLocked()
		g.mu.Unlock()
		return 0, context.Cause(ctx)
	}
}

// Release ends a rollout admitted at version admitted (the value Acquire
// returned); accepted reports whether its group entered the buffer.
func (g *Gate) Release(admitted policy.Version, accepted bool) {
	g.mu.Lock()
	g.core.Finish(admitted, accepted)
	g.grantLocked()
	g.mu.Unlock()
}

// Serve records that the sampler serves v and admits waiting rollouts the
// new window allows.
func (g *Gate) Serve(v policy.Version) {
	g.mu.Lock()
	g.core.Serve(v)
	g.grantLocked()
	g.mu.Unlock()
}

// TakeBatch blocks until the learner may take its next batch (see
// Core.CanTake), records it, and returns; or returns ctx's error with the
// state unchanged. Only one goroutine (the learner) may call it at a time.
func (g *Gate) TakeBatch(ctx context.Context) error {
	g.mu.Lock()
	if g.core.CanTake() {
		g.core.Take()
		g.grantLocked()
		g.mu.Unlock()
		return nil
	}
	w := g.learner.Push()
	g.mu.Unlock()
	select {
	case <-w.C:
		g.learner.Recycle(w)
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		removed := g.learner.Remove(w)
		g.learner.Recycle(w)
		if !removed {
			// The batch was recorded on our behalf just before ctx
			// ended: report it taken, so the caller's view matches.
			return nil
		}
		return context.Cause(ctx)
	}
}

// Discard records that a ready group admitted at version admitted left
// untrained.
func (g *Gate) Discard(admitted policy.Version) {
	g.mu.Lock()
	g.core.Discard(admitted)
	g.grantLocked()
	g.mu.Unlock()
}

// Stats returns the counters.
func (g *Gate) Stats() Stats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.core.Stats()
}

// Waiting returns the number of goroutines blocked in Acquire.
func (g *Gate) Waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiters.Len()
}

func (g *Gate) grantLocked() {
	if g.learner.Len() > 0 && g.core.CanTake() {
		g.core.Take()
		g.learner.Grant(struct{}{})
	}
	for g.waiters.Len() > 0 {
		v, ok := g.core.Admit()
		if !ok {
			return
		}
		g.waiters.Grant(v)
	}
}
