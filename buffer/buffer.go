package buffer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/tandemrl/tandem/policy"
	"github.com/tandemrl/tandem/rl"
	"github.com/tandemrl/tandem/sync/waitq"
)

// ErrClosed is returned by Admit after Close, and by Take once the buffer
// is closed and can no longer fill a batch.
var ErrClosed = errors.New("buffer: closed")

// Buffer is the replay buffer and admission gate for concurrent use:
// rollout workers call Admit before a rollout and Put (or Fail) after it;
// the learner calls Take; the weight sync calls Serve. One mutex guards the
// state; blocked goroutines wait in FIFO queues and are woken one by one
// when they can proceed, never all at once. All methods are safe for
// concurrent use, except that Take must be called by one goroutine at a
// time.
type Buffer struct {
	mu      sync.Mutex
	core    *Core
	closed  bool
	stale   func(rl.Group)
	admit   waitq.Queue[policy.Version]
	put     waitq.Queue[struct{}]
	taker   waitq.Queue[[]rl.Group]
	reserve int // places granted to waiting putters, not yet used
	takeDst []rl.Group
	expired []rl.Group

	// refill holds the workers that found the dataset empty (AwaitRefill);
	// refills counts the over-stale groups handed to onStale so far, and
	// handing those taken out under the lock and not yet handed over.
	refill  waitq.Queue[bool]
	refills atomic.Uint64
	handing int
}

// New returns an empty buffer. onStale, if not nil, receives every group
// removed as over-stale (to requeue its prompt or log it); it is called
// without the buffer's lock held, from the goroutine of the Put or Take that
// found the group, and must not block for long.
func New(cfg Config, onStale func(rl.Group)) (*Buffer, error) {
	c, err := NewCore(cfg)
	if err != nil {
		return nil, err
	}
	return &Buffer{core: c, stale: onStale}, nil
}

// Admit blocks until a rollout may start, then returns the version the
// sampler serves (record it as the group's Admitted version). It returns
// ErrClosed after Close, and ctx's cause, with nothing changed, once ctx is
// done: a ctx done on entry fails even if a place is free, and an admission
// granted as ctx ends is handed back (the rule of x/sync/semaphore's
// Acquire; see waitq.Wait).
func (b *Buffer) Admit(ctx context.Context) (policy.Version, error) {
	var wk waitq.Wakes
	b.mu.Lock()
	return b.admitUnlock(ctx, &wk)
}

// admitUnlock is Admit with b.mu held; it unlocks, then wakes wk (the
// grants the caller made under the lock).
func (b *Buffer) admitUnlock(ctx context.Context, wk *waitq.Wakes) (policy.Version, error) {
	if ctx.Err() != nil { // done before we held the lock: fail, as semaphore does
		b.mu.Unlock()
		wk.Wake()
		return 0, context.Cause(ctx)
	}
	if b.closed {
		b.mu.Unlock()
		wk.Wake()
		return 0, ErrClosed
	}
	if b.admit.Len() == 0 {
		if v, ok := b.core.Admit(); ok {
			b.mu.Unlock()
			wk.Wake()
			return v, nil
		}
	}
	w := b.admit.Push()
	b.mu.Unlock()
	wk.Wake()
	v, granted, err := b.admit.Wait(ctx, &b.mu, w)
	if err != nil {
		if granted && v >= 0 { // admitted as we gave up: hand it back
			b.core.Cancel(v)
			b.wakeLocked(wk)
		}
		b.mu.Unlock()
		wk.Wake()
		return 0, err
	}
	if v < 0 {
		return 0, ErrClosed
	}
	return v, nil
}

// Put accepts g, the result of a rollout admitted at g.Admitted. It blocks
// while the buffer is full (never with pace, whose admission keeps room);
// ctx matters only then. On error (ctx ended while Put waited, even as a
// place was granted to it) g is not accepted and its admission is released
// as by Fail. A group already over-stale is handed to onStale instead of
// being held.
func (b *Buffer) Put(ctx context.Context, g rl.Group) error {
	var wk waitq.Wakes
	stale, err := b.put1(ctx, &g, &wk)
	b.mu.Unlock()
	wk.Wake()
	if stale && b.stale != nil {
		b.handOver([]rl.Group{g})
	}
	return err
}

// PutAdmit is Put followed by Admit, under one lock acquisition when the
// buffer has room: what a rollout worker does between two rollouts.
// accepted reports whether g was accepted; if not, err is Put's, else it is
// Admit's.
func (b *Buffer) PutAdmit(ctx context.Context, g rl.Group) (next policy.Version, accepted bool, err error) {
	var wk waitq.Wakes
	stale, err := b.put1(ctx, &g, &wk)
	if err != nil {
		b.mu.Unlock()
		wk.Wake()
		return 0, false, err
	}
	if stale && b.stale != nil {
		b.mu.Unlock()
		wk.Wake()
		b.handOver([]rl.Group{g})
		next, err = b.Admit(ctx)
		return next, true, err
	}
	next, err = b.admitUnlock(ctx, &wk)
	return next, true, err
}

// put1 accepts g (waiting for room) and returns with b.mu held; the
// grants it made are in wk.
func (b *Buffer) put1(ctx context.Context, g *rl.Group, wk *waitq.Wakes) (stale bool, err error) {
	b.mu.Lock()
	if b.put.Len() > 0 || !b.core.CanPut() {
		w := b.put.Push()
		b.mu.Unlock()
		_, granted, err := b.put.Wait(ctx, &b.mu, w)
		if err != nil {
			if granted {
				b.reserve-- // a place granted as we gave up: hand it back
			}
			b.core.Fail(g.Admitted)
			b.wakeLocked(wk)
			return false, err
		}
		b.mu.Lock()
		b.reserve--
	}
	stale = b.core.Put(*g)
	if stale && b.stale != nil {
		b.handing++ // on its way back: the data has not run out
	}
	b.wakeLocked(wk)
	return stale, nil
}

// Fail ends a rollout admitted at version admitted that produced no group,
// freeing its place.
func (b *Buffer) Fail(admitted policy.Version) {
	b.change(func() { b.core.Fail(admitted) })
}

// Serve records that the sampler serves version v; rollouts waiting for a
// newer version are admitted.
func (b *Buffer) Serve(v policy.Version) {
	b.change(func() { b.core.Serve(v) })
}

// change applies f under the lock, grants whoever can proceed after it and
// wakes them once the lock is released.
func (b *Buffer) change(f func()) {
	var wk waitq.Wakes
	b.mu.Lock()
	f()
	b.wakeLocked(&wk)
	b.mu.Unlock()
	wk.Wake()
}

// Take blocks until the learner at version step can take its batch, then
// appends the batch's GroupsPerBatch groups to dst and returns it. Groups
// over-stale at step are removed first and handed to onStale. Take returns
// ctx's cause if ctx ends while it waits (nothing taken), and ErrClosed
// when the buffer is closed and no batch can be completed any more. A batch
// taken on Take's behalf as ctx ends is kept, not handed back: taking it
// recorded the learner's step (the gate has advanced), so Take returns it
// with a nil error and the caller trains or drops it.
func (b *Buffer) Take(ctx context.Context, step policy.Version, dst []rl.Group) ([]rl.Group, error) {
	var wk waitq.Wakes
	b.mu.Lock()
	b.expired = b.core.Expire(step, b.expired[:0])
	if n := len(b.expired); n > 0 {
		if b.stale != nil {
			b.handing += n
		}
		b.wakeLocked(&wk) // discarded groups freed places
		exp := append([]rl.Group(nil), b.expired...)
		b.mu.Unlock()
		wk.Wake()
		if b.stale != nil {
			b.handOver(exp)
		}
		b.mu.Lock()
	}
	if b.core.CanTake() || (b.core.Len() > 0 && b.exhaustedLocked()) {
		if b.core.CanTake() {
			dst = b.core.Take(dst)
		} else {
			dst = b.core.TakeRest(dst) // the data ran out: the last, short batch
		}
		b.wakeLocked(&wk)
		b.mu.Unlock()
		wk.Wake()
		return dst, nil
	}
	if b.drainedLocked() {
		b.mu.Unlock()
		return dst, ErrClosed
	}
	b.takeDst = dst
	w := b.taker.Push()
	b.mu.Unlock()
	got, granted, err := b.taker.Wait(ctx, &b.mu, w)
	if err != nil {
		if !granted {
			b.takeDst = nil
			b.mu.Unlock()
			return dst, err
		}
		b.mu.Unlock() // taken (or closed) for us as ctx ended: keep it
	}
	if got == nil {
		return dst, ErrClosed
	}
	return got, nil
}

// handOver hands gs, removed as over-stale and counted in b.handing, to
// onStale; then it counts them as refills and wakes the workers waiting in
// AwaitRefill: with requeue, their prompts are back in the dataset.
func (b *Buffer) handOver(gs []rl.Group) {
	for _, g := range gs {
		b.stale(g)
	}
	var wk waitq.Wakes
	b.mu.Lock()
	b.handing -= len(gs)
	b.refills.Add(uint64(len(gs)))
	for b.refill.Defer(true, &wk) {
	}
	b.wakeLocked(&wk)
	b.mu.Unlock()
	wk.Wake()
}

// Refills returns how many over-stale groups have been handed to onStale
// so far (with requeue: how many prompts went back to the dataset). A
// rollout worker reads it before it asks the dataset for a problem, and
// passes it to AwaitRefill if the dataset had none.
func (b *Buffer) Refills() uint64 { return b.refills.Load() }

// AwaitRefill is called by a rollout worker that found the dataset empty,
// having released its admission (Fail), with the Refills count it read
// before asking. With requeue, an over-stale group may still send its prompt
// back to the dataset while rollouts run or groups are held, so the worker
// waits: AwaitRefill returns true once a prompt has come back since seen
// (ask the dataset again), and false once nothing can come back any more —
// no rollout is running, nothing is on its way back, and the learner has
// taken what was held (the last batch may be short: see Take) — or the
// buffer is closed. ctx's cause is returned if ctx ends first. Under drop
// and pace nothing comes back, and it returns false at once.
func (b *Buffer) AwaitRefill(ctx context.Context, seen uint64) (bool, error) {
	if b.core.Config().Policy != rl.Requeue || b.stale == nil {
		return false, nil
	}
	var wk waitq.Wakes
	b.mu.Lock()
	if b.refills.Load() != seen {
		b.mu.Unlock()
		return true, nil
	}
	if b.closed {
		b.mu.Unlock()
		return false, nil
	}
	w := b.refill.Push()
	b.wakeLocked(&wk) // a worker more at the end may complete the exhaustion
	b.mu.Unlock()
	wk.Wake()
	more, _, err := b.refill.Wait(ctx, &b.mu, w)
	if err != nil {
		b.mu.Unlock() // Wait returns holding the lock; a grant needs no undo
		return false, err
	}
	return more, nil
}

// exhaustedLocked reports whether, with requeue, the data has run out for
// good: a worker waits in AwaitRefill (it found the dataset empty, and no
// prompt came back since, or it would have been woken), no rollout is
// running, and no over-stale group is on its way back. Only what is held
// remains to be trained.
func (b *Buffer) exhaustedLocked() bool {
	return b.refill.Len() > 0 && b.core.Running() == 0 && b.handing == 0
}

// drainedLocked: closed, nothing running, and not enough to fill a batch.
func (b *Buffer) drainedLocked() bool {
	return b.closed && b.core.Running() == 0 && !b.core.CanTake()
}

// wakeLocked grants every goroutine that can now proceed, in order: the
// learner, then putters (for whom places are reserved), then admitters. The
// wake-ups go to wk, for the caller to deliver once it has unlocked (right
// away: a waiter that gives up waits for its grant's wake-up under the
// lock).
func (b *Buffer) wakeLocked(wk *waitq.Wakes) {
	if b.taker.Len() > 0 {
		switch {
		case b.core.CanTake():
			b.taker.Defer(b.core.Take(b.takeDst), wk)
			b.takeDst = nil
		case b.core.Len() > 0 && b.exhaustedLocked():
			b.taker.Defer(b.core.TakeRest(b.takeDst), wk) // the last, short batch
			b.takeDst = nil
		}
	}
	if !b.closed && b.core.Len() == 0 && b.exhaustedLocked() {
		b.closed = true // nothing held, running or coming back: the data ran out
	}
	if b.taker.Len() > 0 && b.drainedLocked() {
		b.taker.Defer(nil, wk)
	}
	for b.put.Len() > 0 && b.core.Len()+b.reserve < b.core.Limit() {
		b.reserve++
		b.put.Defer(struct{}{}, wk)
	}
	if b.closed {
		for b.refill.Defer(false, wk) {
		}
		for b.admit.Defer(-1, wk) {
		}
		return
	}
	for b.admit.Len() > 0 {
		v, ok := b.core.Admit()
		if !ok {
			return
		}
		b.admit.Defer(v, wk)
	}
}

// Close stops admissions: waiting and future Admit calls return ErrClosed,
// and Take returns ErrClosed once no batch can be completed. Call it when
// no more rollouts will start; rollouts already running may still Put.
func (b *Buffer) Close() {
	b.change(func() { b.closed = true })
}

// Drain removes and returns every held group (for shutdown); they are
// counted as Drained.
func (b *Buffer) Drain() (out []rl.Group) {
	b.change(func() { out = b.core.Drain(nil) })
	return out
}

// Stats returns the counters.
func (b *Buffer) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.core.Stats()
}

// Len returns the number of held groups.
func (b *Buffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.core.Len()
}
